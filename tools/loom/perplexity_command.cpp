// `loom perplexity -m MODEL -f TEXT [-c 512] [-b 512]`: perplexity as llama-perplexity computes
// it. The text, tokenized with BOS, is cut into chunks of -c tokens (the rest dropped); each
// chunk starts with BOS, is decoded from an empty cache, and only its second half is scored
// (the first half gives every scored token at least c/2 tokens of context). PPL = exp(mean
// negative log-likelihood), printed as it runs ("[1]2.5046,[2]...") and as a final estimate.
//
// Checking a quantization: `--kl-divergence-base FILE` saves the scored logits of a (reference)
// model; `--kl-divergence-base FILE --kl-divergence` with another model scores the same tokens
// and reports the KL divergence of its next-token distributions from the saved ones and how often
// both put the same token first.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/commands.h"
#include "tools/loom/model_options.h"
#include "tools/loom/perplexity_scoring.h"

namespace loom::tools {
namespace {

struct PerplexityOptions {
    ModelOptions model;
    std::string text_path;
    int64_t n_ctx = 512;
    int64_t n_batch = 512;
    int64_t max_chunks = -1;
    std::string kl_base_path;
    bool kl_compare = false;
};

constexpr char kKlMagic[8] = {'L', 'O', 'O', 'M', 'K', 'L', 'D', '1'};

// The saved base: header, every chunk's tokens, then the scored logits of each chunk.
struct KlHeader {
    int64_t n_ctx, n_vocab, n_chunk;
};

int64_t n_scored(int64_t n_ctx) {
    return n_ctx - 1 - n_ctx / 2;
}

std::vector<int32_t> chunked_tokens(const engine::Model &model, const PerplexityOptions &o) {
    std::ifstream in(o.text_path, std::ios::binary);
    if (!in) fail("perplexity", "cannot read {}", o.text_path);
    std::stringstream text;
    text << in.rdbuf();
    std::vector<int32_t> tokens = model.vocab().tokenize(text.str(), true, false);
    int64_t n_chunk = int64_t(tokens.size()) / o.n_ctx;
    if (o.max_chunks >= 0) n_chunk = std::min(n_chunk, o.max_chunks);
    if (n_chunk == 0) {
        fail("perplexity", "{} has {} tokens, fewer than one chunk of {} (lower -c)", o.text_path,
             tokens.size(), o.n_ctx);
    }
    tokens.resize(size_t(n_chunk * o.n_ctx));
    return tokens;
}

// Decodes one chunk (its first token replaced by BOS when the vocabulary adds one) and returns
// the logits of its scored positions, [n_scored][n_vocab].
std::vector<float> score_chunk(engine::Context &ctx, std::span<const int32_t> chunk,
                               const engine::Vocab &vocab) {
    const int64_t n_ctx = int64_t(chunk.size()), first = n_ctx / 2;
    const int64_t n_vocab = ctx.model().hparams().n_vocab;
    ctx.memory().clear();
    std::vector<float> out;
    out.reserve(size_t(n_scored(n_ctx) * n_vocab));
    for (int64_t start = 0; start < n_ctx; start += ctx.options().n_batch) {
        const int64_t end = std::min(n_ctx, start + ctx.options().n_batch);
        engine::Batch batch;
        for (int64_t i = start; i < end; ++i) {
            const int32_t token = i == 0 && vocab.add_bos() ? vocab.bos() : chunk[size_t(i)];
            batch.add(token, engine::Pos(i), 0, i >= first && i < n_ctx - 1);
        }
        ctx.decode(batch);
        for (int64_t r = 0; r < ctx.n_outputs(); ++r) {
            const auto row = ctx.logits(r);
            out.insert(out.end(), row.begin(), row.end());
        }
    }
    return out;
}

void write_or_fail(std::ofstream &out, const void *data, size_t bytes, const std::string &path) {
    out.write(static_cast<const char *>(data), std::streamsize(bytes));
    if (!out) fail("perplexity", "writing {} failed", path);
}

void read_or_fail(std::ifstream &in, void *data, size_t bytes, const std::string &path) {
    in.read(static_cast<char *>(data), std::streamsize(bytes));
    if (!in) fail("perplexity", "{} is shorter than its header says", path);
}

void run_perplexity(const PerplexityOptions &o) {
    if (o.n_ctx < 4) fail("perplexity", "-c {} is too small to score anything", o.n_ctx);
    if (o.max_chunks == 0) fail("perplexity", "--chunks 0 scores nothing");
    if (o.kl_compare && o.kl_base_path.empty()) {
        fail("perplexity",
             "--kl-divergence needs --kl-divergence-base FILE (saved by a run "
             "without --kl-divergence)");
    }
    const auto model = engine::Model::load(o.model.path);
    const int64_t n_vocab = model->hparams().n_vocab;

    std::vector<int32_t> tokens;
    std::ifstream base_in;
    std::ofstream base_out;
    KlHeader header{o.n_ctx, n_vocab, 0};
    if (o.kl_compare) {
        base_in.open(o.kl_base_path, std::ios::binary);
        char magic[8];
        if (!base_in || !base_in.read(magic, 8) || std::memcmp(magic, kKlMagic, 8) != 0) {
            fail("perplexity", "{} is not a logits file saved by --kl-divergence-base",
                 o.kl_base_path);
        }
        read_or_fail(base_in, &header, sizeof header, o.kl_base_path);
        if (header.n_vocab != n_vocab || header.n_ctx < 4 || header.n_chunk < 1) {
            fail("perplexity", "{} holds {} chunks of {} tokens over {} logits; the model has {}",
                 o.kl_base_path, header.n_chunk, header.n_ctx, header.n_vocab, n_vocab);
        }
        tokens.resize(size_t(header.n_chunk * header.n_ctx));
        read_or_fail(base_in, tokens.data(), tokens.size() * sizeof(int32_t), o.kl_base_path);
        for (const int32_t t : tokens) {
            if (t < 0 || t >= n_vocab)
                fail("perplexity", "{}: token {} is out of range", o.kl_base_path, t);
        }
    } else {
        if (o.text_path.empty()) fail("perplexity", "-f TEXT is required");
        tokens = chunked_tokens(*model, o);
        header.n_chunk = int64_t(tokens.size()) / o.n_ctx;
        if (!o.kl_base_path.empty()) {
            base_out.open(o.kl_base_path, std::ios::binary | std::ios::trunc);
            if (!base_out) fail("perplexity", "cannot write {}", o.kl_base_path);
            write_or_fail(base_out, kKlMagic, 8, o.kl_base_path);
            write_or_fail(base_out, &header, sizeof header, o.kl_base_path);
            write_or_fail(base_out, tokens.data(), tokens.size() * sizeof(int32_t), o.kl_base_path);
        }
    }
    const int64_t n_ctx = header.n_ctx;

    engine::ContextOptions options = context_options(o.model);
    options.n_ctx = engine::whole_windows(n_ctx);
    options.n_batch = options.n_ubatch = std::min(o.n_batch, n_ctx);
    engine::Context ctx(*model, options);
    fmt::print(stderr, "loom perplexity: {} chunks of {} tokens, {} scored per chunk\n",
               header.n_chunk, n_ctx, n_scored(n_ctx));

    RunningMean nll, kld, same_top;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < header.n_chunk; ++c) {
        const std::span<const int32_t> chunk(tokens.data() + c * n_ctx, size_t(n_ctx));
        const std::vector<float> logits = score_chunk(ctx, chunk, model->vocab());
        std::vector<float> base(o.kl_compare ? logits.size() : 0);
        if (o.kl_compare) read_or_fail(base_in, base.data(), base.size() * 4, o.kl_base_path);
        if (base_out.is_open()) {
            write_or_fail(base_out, logits.data(), logits.size() * 4, o.kl_base_path);
        }
        for (int64_t j = 0; j < n_scored(n_ctx); ++j) {
            const std::span<const float> row(logits.data() + j * n_vocab, size_t(n_vocab));
            nll.add(token_nll(row, chunk[size_t(n_ctx / 2 + j + 1)]));
            if (!o.kl_compare) continue;
            const std::span<const float> base_row(base.data() + j * n_vocab, size_t(n_vocab));
            kld.add(kl_divergence(base_row, row));
            same_top.add(std::max_element(row.begin(), row.end()) - row.begin() ==
                                 std::max_element(base_row.begin(), base_row.end()) -
                                     base_row.begin()
                             ? 1.0
                             : 0.0);
        }
        if (c == 0) {
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print(stderr, "loom perplexity: {:.2f} seconds per chunk, about {:.1f} s in all\n",
                       s, s * double(header.n_chunk));
        }
        if (o.kl_compare) {
            fmt::print("[{}] PPL {:.4f}, KLD {:.6f}, same top {:.2f}%\n", c + 1,
                       perplexity_of(nll).value, kld.mean(), 100.0 * same_top.mean());
        } else {
            fmt::print("[{}]{:.4f},", c + 1, perplexity_of(nll).value);
        }
        std::fflush(stdout);
    }
    const Perplexity ppl = perplexity_of(nll);
    fmt::print("{}Final estimate: PPL = {:.4f} +/- {:.5f}\n", o.kl_compare ? "" : "\n", ppl.value,
               ppl.error);
    if (o.kl_compare) {
        fmt::print("Mean KLD: {:.6f} +/- {:.6f}\n", kld.mean(), kld.standard_error());
        fmt::print("Same top token: {:.3f} +/- {:.3f} %\n", 100.0 * same_top.mean(),
                   100.0 * same_top.standard_error());
    }
    if (base_out.is_open()) {
        base_out.close();
        if (!base_out) fail("perplexity", "writing {} failed", o.kl_base_path);
        fmt::print(stderr, "loom perplexity: saved the logits of {} tokens to {}\n", nll.count(),
                   o.kl_base_path);
    }
}

}  // namespace

void add_perplexity_command(CLI::App &app, int &exit_code) {
    CLI::App *command = app.add_subcommand(
        "perplexity", "perplexity of a text, or KL divergence from saved logits");
    auto o = std::make_shared<PerplexityOptions>();
    add_model_options(*command, o->model, "f16");
    command->add_option("-f,--file", o->text_path, "the text to score");
    command->add_option("-c,--ctx-size", o->n_ctx, "tokens per chunk")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    command->add_option("-b,--batch-size", o->n_batch, "tokens per decode")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    command->add_option("--chunks", o->max_chunks, "score at most this many chunks (-1: all)")
        ->capture_default_str();
    command->add_option("--kl-divergence-base", o->kl_base_path,
                        "save the scored logits here (or read them, with --kl-divergence)");
    command->add_flag("--kl-divergence", o->kl_compare,
                      "compare with the logits saved in --kl-divergence-base");
    command->callback([o, &exit_code] {
        run_perplexity(*o);
        exit_code = 0;
    });
}

}  // namespace loom::tools
