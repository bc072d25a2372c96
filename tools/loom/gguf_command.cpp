// `loom gguf dump FILE [--json]`: describes a GGUF file (header, metadata, tensor table).
// `loom gguf synth OUT [--type T] [--n-embd N ...]`: writes a Llama-shaped model with random
// weights (for benchmarks, and `make run` when no real model is at hand).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "engine/model/synthetic_llama.h"
#include "loom/gguf.h"
#include "tools/loom/commands.h"

namespace loom::tools {

void add_gguf_command(CLI::App &app, int &exit_code) {
    CLI::App *gguf = app.add_subcommand("gguf", "inspect GGUF model files");
    gguf->require_subcommand(1);

    CLI::App *dump = gguf->add_subcommand(
        "dump", "print the header, every metadata key with its type and value, and the tensors");
    auto path = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    dump->add_option("file", *path, "the GGUF file")->required();
    dump->add_flag("--json", *as_json, "one JSON object, every value in full");
    dump->callback([path, as_json, &exit_code] {
        const gguf::File file(*path);
        const std::string text =
            *as_json ? gguf::format_json(file.contents()) : gguf::format_text(file.contents());
        std::fwrite(text.data(), 1, text.size(), stdout);
        exit_code = 0;
    });

    CLI::App *synth = gguf->add_subcommand(
        "synth", "write a llama model with random weights (fixed seed) and a synthetic vocabulary");
    auto out = std::make_shared<std::string>();
    auto type_name = std::make_shared<std::string>("Q8_0");
    auto shape = std::make_shared<engine::LlamaShape>();
    auto seed = std::make_shared<uint32_t>(1);
    synth->add_option("out", *out, "the GGUF file to write")->required();
    synth->add_option("--type", *type_name, "type of the 2-D weights (F32, F16, Q8_0, Q4_0, ...)")
        ->capture_default_str();
    synth->add_option("--n-vocab", shape->n_vocab)->capture_default_str();
    synth->add_option("--n-embd", shape->n_embd)->capture_default_str();
    synth->add_option("--n-layer", shape->n_layer)->capture_default_str();
    synth->add_option("--n-head", shape->n_head)->capture_default_str();
    synth->add_option("--n-head-kv", shape->n_head_kv)->capture_default_str();
    synth->add_option("--n-ff", shape->n_ff)->capture_default_str();
    synth->add_option("--seed", *seed)->capture_default_str();
    synth->callback([out, type_name, shape, seed, &exit_code] {
        const std::optional<DType> type = dtype_from_name(*type_name);
        if (!type) fail("gguf", "unknown type {}", *type_name);
        engine::write_synthetic_llama(*out, *shape, *type, *seed);
        exit_code = 0;
    });
}

}  // namespace loom::tools
