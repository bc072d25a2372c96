// loom embed: embeddings of texts, as llama.cpp's llama-embedding gives them. Each text (the
// prompt, or each line of a file) is tokenized with the model's special tokens; many texts go in
// one decode, each its own sequence; each text's token states are pooled (the model's pooling
// type, or --pooling) and L2-normalised (--normalize 1, the default), or with --pooling none
// written per token; a reranker's (--pooling rank) scores each text, or each QUERY<tab>DOCUMENT
// pair. Out: OpenAI's JSON shape, one JSON array per line, or raw float32.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/commands.h"
#include "tools/loom/model_options.h"
#include "tools/loom/progress_bar.h"

namespace loom::tools {
namespace {

struct EmbedOptions {
    ModelOptions model;
    std::string prompt;
    std::string file;
    std::string pooling;  // empty: the model's
    int normalize = 1;
    std::string output = "json";
    int64_t n_batch = 2048;
};

engine::Pooling pooling_of(const std::string &name, const engine::HParams &hp) {
    if (name.empty()) return hp.pooling;
    const std::optional<engine::Pooling> pooling = engine::pooling_from_name(name);
    if (!pooling) fail("embed", "--pooling '{}' is not one of none, mean, cls, last, rank", name);
    return *pooling;
}

// A text's tokens: with rank pooling, "QUERY<tab>DOCUMENT" is a pair for the reranker (as
// llama-embedding's --cls-separator), formed as llama-server forms it; else the text itself,
// with the model's special tokens.
std::vector<int32_t> tokens_of(const engine::Model &model, const std::string &text,
                               engine::Pooling pooling) {
    const size_t tab = text.find('\t');
    if (pooling == engine::Pooling::rank && tab != std::string::npos) {
        return engine::rerank_pair_tokens(model.vocab(), engine::rerank_prompt(model),
                                          std::string_view(text).substr(0, tab),
                                          std::string_view(text).substr(tab + 1));
    }
    return model.vocab().tokenize(text, true, false);
}

// The texts: the prompt, or the lines of the file (empty lines skipped, as llama-embedding).
std::vector<std::string> texts_of(const EmbedOptions &o) {
    if (o.file.empty()) return {o.prompt};
    const std::string all = read_text_file(o.file, "embed", "texts");
    std::vector<std::string> out;
    for (size_t at = 0; at <= all.size();) {
        const size_t end = std::min(all.find('\n', at), all.size());
        std::string line = all.substr(at, end - at);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) out.push_back(std::move(line));
        at = end + 1;
    }
    if (out.empty()) fail("embed", "'{}' holds no text", o.file);
    return out;
}

// Writes the embeddings as they come: each is one text's (pooled) or one token's.
class EmbeddingWriter {
  public:
    EmbeddingWriter(std::string format, std::string model)
        : format_(std::move(format)), model_(std::move(model)) {
        if (format_ != "json" && format_ != "jsonl" && format_ != "f32") {
            fail("embed", "-o '{}' is not one of json, jsonl, f32", format_);
        }
    }
    void add(std::span<const float> embedding) {
        if (format_ == "f32") {
            std::fwrite(embedding.data(), sizeof(float), embedding.size(), stdout);
        } else if (format_ == "jsonl") {
            std::fputs(
                (nlohmann::json(std::vector<float>(embedding.begin(), embedding.end())).dump() +
                 "\n")
                    .c_str(),
                stdout);
        } else {
            data_.push_back(
                {{"object", "embedding"},
                 {"index", data_.size()},
                 {"embedding", std::vector<float>(embedding.begin(), embedding.end())}});
        }
    }
    void finish(int64_t n_tokens) {
        if (format_ == "json") {
            const nlohmann::json out = {
                {"object", "list"},
                {"data", data_},
                {"model", model_},
                {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
            std::fputs((out.dump() + "\n").c_str(), stdout);
        }
        std::fflush(stdout);
    }

  private:
    std::string format_, model_;
    nlohmann::json data_ = nlohmann::json::array();
};

// Texts decoded together: as many as fit n_batch tokens and the context's sequences.
constexpr int kMaxSequences = 64;

void run_embed(const EmbedOptions &o) {
    if (o.prompt.empty() == o.file.empty()) fail("embed", "give one of -p TEXT and -f FILE");
    if (o.normalize != 0 && o.normalize != 1) fail("embed", "--normalize takes 0 or 1");
    const auto model = engine::Model::load(o.model.path);
    const engine::HParams &hp = model->hparams();
    const engine::Pooling pooling = pooling_of(o.pooling, hp);
    EmbeddingWriter writer(o.output, std::filesystem::path(o.model.path).filename().string());
    const std::vector<std::string> texts = texts_of(o);
    std::vector<std::vector<int32_t>> tokens;
    int64_t n_tokens = 0;
    for (const std::string &text : texts) {
        tokens.push_back(tokens_of(*model, text, pooling));
        n_tokens += int64_t(tokens.back().size());
    }
    engine::ContextOptions copt = context_options(o.model);
    copt.n_ctx = std::min(o.n_batch, hp.n_ctx_train);  // no text is longer than the model's
    copt.n_batch = copt.n_ctx;
    copt.n_ubatch = copt.n_ctx;
    copt.n_seq_max = kMaxSequences;
    copt.embeddings = true;
    engine::Context ctx(*model, copt);
    std::optional<ProgressBar> bar;
    if (!o.file.empty()) bar.emplace("embedding", "texts");
    const auto embeddings =
        engine::embed_sequences(ctx, tokens, pooling, o.normalize == 1, [&](size_t done) {
            if (bar)
                bar->update(double(done) / double(texts.size()), int64_t(done),
                            int64_t(texts.size()));
        });
    for (const auto &text : embeddings) {
        for (const std::vector<float> &e : text) writer.add(e);
    }
    writer.finish(n_tokens);
}

}  // namespace

void add_embed_command(CLI::App &app, int &exit_code) {
    CLI::App *command = app.add_subcommand(
        "embed", "embeddings of a text or of each line of a file (an embedding model's, pooled)");
    auto options = std::make_shared<EmbedOptions>();
    add_model_options(*command, options->model, "f16", "off");
    command->add_option("-p,--prompt", options->prompt, "the text");
    command->add_option("-f,--file", options->file, "a file of texts, one per line");
    command->add_option("--pooling", options->pooling,
                        "none (one embedding per token), mean, cls, last or rank (a reranker's "
                        "scores; a line QUERY<tab>DOCUMENT is a pair) (default: the model's)");
    command->add_option(
        "--normalize", options->normalize,
        "1: divide each embedding by its length (the default, as OpenAI's; never a reranker's "
        "scores); 0: raw");
    command->add_option("-o,--output", options->output,
                        "json (OpenAI's shape, the default), jsonl (one array a line) or f32 (raw "
                        "little-endian floats)");
    command->add_option("-b,--batch-size", options->n_batch, "tokens decoded at once (2048)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
    command->callback([options, &exit_code] {
        run_embed(*options);
        exit_code = 0;
    });
}

}  // namespace loom::tools
