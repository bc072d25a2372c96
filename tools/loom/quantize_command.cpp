// `loom quantize IN.gguf OUT.gguf TYPE [--threads N] [--pure] [--allow-requantize]`: writes a
// copy of a model with its weights quantized to one of llama-quantize's file types (Q4_K_M,
// Q8_0, ...), tensor by tensor as llama-quantize chooses (engine/quantize/). A progress bar on
// stderr; the sizes before and after on stdout.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/commands.h"
#include "tools/loom/progress_bar.h"

namespace loom::tools {

namespace {

struct QuantizeArgs {
    std::string in_path;
    std::string out_path;
    std::string type;
    int n_threads = 0;
    bool pure = false;
    bool allow_requantize = false;
};

std::string describe_size(uint64_t bytes, uint64_t n_elements) {
    const double bpw = n_elements == 0 ? 0.0 : double(bytes) * 8.0 / double(n_elements);
    return fmt::format("{:.2f} MiB ({:.2f} bits per weight)", double(bytes) / (1024.0 * 1024.0),
                       bpw);
}

void run_quantize(const QuantizeArgs &args) {
    const engine::FileType *type = engine::find_file_type(args.type);
    if (type == nullptr) {
        fail("quantize", "unknown type '{}'; the types are {}", args.type,
             engine::file_type_names());
    }
    if (args.n_threads < 0) fail("quantize", "--threads must be positive");
    auto bar = std::make_shared<ProgressBar>("quantizing", "tensors");
    const engine::QuantizeReport report = engine::quantize_file(
        args.in_path, args.out_path,
        {.file_type = type,
         .pure = args.pure,
         .allow_requantize = args.allow_requantize,
         .n_threads = args.n_threads,
         .progress = [bar](const engine::QuantizeProgress &p) {
             bar->update(p.bytes_total == 0 ? 1.0 : double(p.bytes_done) / double(p.bytes_total),
                         int64_t(p.tensors_done), int64_t(p.n_tensors));
         }});
    int n_fallback = 0;
    for (const engine::QuantizedTensor &t : report.tensors) {
        if (t.to == t.wanted) continue;
        ++n_fallback;
        std::fprintf(stderr, "%s: rows of %lld do not fit %s blocks, written as %s\n",
                     t.name.c_str(), static_cast<long long>(t.ne0), dtype_name(t.wanted),
                     dtype_name(t.to));
    }
    std::printf("%s -> %s as %s%s\n", args.in_path.c_str(), args.out_path.c_str(), type->name,
                args.pure ? " (pure)" : "");
    std::printf("%zu tensors, %d in a fallback type (rows that do not fit the blocks)\n",
                report.tensors.size(), n_fallback);
    std::printf("size before: %s, file %llu bytes\n",
                describe_size(report.bytes_in, report.n_elements).c_str(),
                static_cast<unsigned long long>(report.file_bytes_in));
    std::printf("size after:  %s, file %llu bytes\n",
                describe_size(report.bytes_out, report.n_elements).c_str(),
                static_cast<unsigned long long>(report.file_bytes_out));
}

}  // namespace

void add_quantize_command(CLI::App &app, int &exit_code) {
    auto args = std::make_shared<QuantizeArgs>();
    CLI::App *command = app.add_subcommand(
        "quantize", "write a copy of a model with its weights quantized (as llama-quantize)");
    command->add_option("input", args->in_path, "the GGUF model to quantize")->required();
    command->add_option("output", args->out_path, "the GGUF file to write")->required();
    command
        ->add_option("type", args->type,
                     "the file type: " + engine::file_type_names() +
                         " (K mixes keep some tensors in more bits, as llama-quantize does)")
        ->required();
    command->add_option("--threads,-t", args->n_threads,
                        "threads to quantize with (default: all hardware threads)");
    command->add_flag("--pure", args->pure,
                      "every 2-D weight, token_embd and output included, in the type's base "
                      "type (as llama-quantize --pure)");
    command->add_flag("--allow-requantize", args->allow_requantize,
                      "also convert weights that are already quantized");
    command->callback([args, &exit_code] {
        run_quantize(*args);
        exit_code = 0;
    });
}

}  // namespace loom::tools
