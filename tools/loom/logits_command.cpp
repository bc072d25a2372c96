// `loom logits -m MODEL --tokens 1,2,3 [--all] --out FILE [--batched --tokens 4,5 ...]`: evaluates
// token sequences and writes their logits as raw little-endian float32 [n_rows][n_vocab]: every
// position with --all, else the last, sequence after sequence. With --batched, each --tokens is a
// sequence of its own (ids 0, 1, ..., each in a KV stream of its own), all decoded in one batch.
// --dump-tensors DIR also writes every named F32 node of the graph, to compare intermediate
// results with another engine's.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/commands.h"
#include "tools/loom/model_options.h"

namespace loom::tools {

namespace {

static_assert(std::endian::native == std::endian::little, "logits are written as little-endian");

struct LogitsOptions {
    ModelOptions model;
    std::vector<std::string> token_lists;  // one "1,2,3" per --tokens
    std::string out_path;
    bool all_positions = false;
    bool batched = false;
    std::string dump_dir;
};

// An eval callback writing each named, contiguous F32 node to dir/<name>.<op>.f32 (float32,
// as laid out) and a line "<name>.<op> ne0 ne1 ne2 ne3" to dir/index.txt.
CpuBackend::EvalCallback tensor_dumper(const std::string &dir) {
    std::filesystem::create_directories(dir);
    auto index = std::make_shared<std::ofstream>(std::filesystem::path(dir) / "index.txt");
    if (!*index) fail("logits", "cannot write into {}", dir);
    return [dir, index](const Tensor *node) {
        if (node->type != DType::F32 || node->name[0] == '\0' || !node->is_contiguous()) return;
        const std::string name = fmt::format("{}.{}", node->name, op_name(node->op));
        std::ofstream out(std::filesystem::path(dir) / (name + ".f32"), std::ios::binary);
        out.write(static_cast<const char *>(node->data),
                  std::streamsize(node->nelements() * sizeof(float)));
        *index << fmt::format("{} {} {} {} {}\n", name, node->ne[0], node->ne[1], node->ne[2],
                              node->ne[3]);
    };
}

// "1,403,407" -> {1, 403, 407}; each id in 0..n_vocab-1.
std::vector<int32_t> parse_tokens(const std::string &list, int64_t n_vocab) {
    std::vector<int32_t> ids;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t end = std::min(list.find(',', start), list.size());
        int32_t id = 0;
        const auto [rest, ec] = std::from_chars(list.data() + start, list.data() + end, id);
        if (ec != std::errc() || rest != list.data() + end) {
            fail("logits", "--tokens \"{}\": \"{}\" is not a token id", list,
                 list.substr(start, end - start));
        }
        if (id < 0 || id >= n_vocab) {
            fail("logits", "token id {} is outside the vocabulary (0..{})", id, n_vocab - 1);
        }
        ids.push_back(id);
        start = end + 1;
    }
    return ids;
}

// Sequence s's tokens at positions 0.., with the logits wanted per `all_positions`.
engine::Batch make_batch(const std::vector<std::vector<int32_t>> &sequences, bool all_positions) {
    engine::Batch batch;
    for (size_t s = 0; s < sequences.size(); ++s) {
        const std::vector<int32_t> &tokens = sequences[s];
        for (size_t i = 0; i < tokens.size(); ++i) {
            batch.add(tokens[i], engine::Pos(i), engine::SeqId(s),
                      all_positions || i + 1 == tokens.size());
        }
    }
    return batch;
}

void write_logits(const LogitsOptions &options) {
    if (options.token_lists.size() > 1 && !options.batched) {
        fail("logits", "--tokens is given {} times; several sequences need --batched",
             options.token_lists.size());
    }
    std::ofstream out(options.out_path, std::ios::binary | std::ios::trunc);
    if (!out) fail("logits", "cannot open {} for writing", options.out_path);

    const auto model = engine::Model::load(options.model.path);
    const int64_t n_vocab = model->hparams().n_vocab;
    std::vector<std::vector<int32_t>> sequences;
    for (const std::string &list : options.token_lists) {
        sequences.push_back(parse_tokens(list, n_vocab));
    }
    const engine::Batch batch = make_batch(sequences, options.all_positions);

    engine::ContextOptions context = context_options(options.model);
    // Whole attention windows, so that one sequence alone and the same sequence in a batch
    // attend over the same number of cells.
    context.n_ctx = engine::whole_windows(batch.size());
    context.n_batch = batch.size();
    context.n_seq_max = int(sequences.size());
    // A KV stream per sequence, as loom serve's slots have: each sequence's cells then start at
    // 0 as when it is alone. In one shared stream a sequence's cells sit after the others', and
    // the softmax sums its row a vector at a time (as ggml does), so where the cells fall among
    // the vector lanes changes the rounding of its probabilities.
    context.kv_unified = false;
    engine::Context ctx(*model, context);
    if (!options.dump_dir.empty()) ctx.set_eval_callback(tensor_dumper(options.dump_dir));
    ctx.decode(batch);

    for (int64_t row = 0; row < ctx.n_outputs(); ++row) {
        const std::span<const float> logits = ctx.logits(row);
        out.write(reinterpret_cast<const char *>(logits.data()),
                  std::streamsize(logits.size_bytes()));
    }
    out.close();
    if (!out) fail("logits", "writing {} failed", options.out_path);
    fmt::print("{} rows of {} float32 logits -> {}\n", ctx.n_outputs(), n_vocab, options.out_path);
}

}  // namespace

void add_logits_command(CLI::App &app, int &exit_code) {
    CLI::App *command =
        app.add_subcommand("logits", "write the logits of token sequences as raw float32");
    auto options = std::make_shared<LogitsOptions>();
    // The most exact setting by default, that of the reference logits: KV f32, no flash attention.
    add_model_options(*command, options->model, "f32", "off");
    command
        ->add_option("--tokens", options->token_lists,
                     "comma-separated token ids; once per sequence with --batched")
        ->required();
    command->add_option("--out", options->out_path, "the output file")->required();
    command->add_flag("--all", options->all_positions, "every position's logits, not the last");
    command->add_flag("--batched", options->batched,
                      "decode every --tokens list in one batch, as separate sequences");
    command->add_option("--dump-tensors", options->dump_dir,
                        "also write every named F32 node of the graph into this folder");
    command->callback([options, &exit_code] {
        write_logits(*options);
        exit_code = 0;
    });
}

}  // namespace loom::tools
