// The cost of a grammar over a large vocabulary: Qwen2's 151,646 tokens
// (../shared/models/vocab/ggml-vocab-qwen2.gguf) under grammars/json.gbnf, at three points of a
// document. Sampler::sample checks the token it picked first (grammar/first_pick) and only when
// the grammar refuses it marks every token of the vocabulary (grammar/every_token,
// TokenGrammar::mark_allowed): what a token costs is first_pick plus every_token times the share
// of refused picks. A request to `loom serve` with a schema also pays once for the grammar over
// the vocabulary (grammar/setup: a JSON Schema made GBNF, parsed, TokenGrammar::for_vocab), of
// which only the grammar's part is left once the vocabulary's pieces are shared
// (grammar/setup_shared, as the server keeps them).
//   loom-bench-grammar [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_grammar.h"
#include "engine/sampling/sampler.h"
#include "engine/vocab/vocab.h"
#include "loom/gguf.h"

namespace loom {
namespace {

const engine::Vocab &qwen2_vocab() {
    static const engine::Vocab vocab = [] {
        const gguf::File file(std::string(LOOM_SOURCE_DIR) +
                              "/../shared/models/vocab/ggml-vocab-qwen2.gguf");
        return engine::Vocab::from_gguf(file);
    }();
    return vocab;
}

// The vocabulary's pieces, built once for every grammar here (as loom serve keeps them).
const std::shared_ptr<const engine::grammar::VocabPieces> &qwen2_pieces() {
    static const auto pieces = engine::grammar::VocabPieces::of(qwen2_vocab());
    return pieces;
}

const engine::grammar::Grammar &json_gbnf() {
    static const engine::grammar::Grammar grammar = [] {
        std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/grammars/json.gbnf");
        const std::string text{std::istreambuf_iterator<char>(in),
                               std::istreambuf_iterator<char>()};
        return engine::grammar::parse_gbnf(text);
    }();
    return grammar;
}

std::unique_ptr<engine::grammar::TokenGrammar> json_after(const std::string &text) {
    auto grammar = std::make_unique<engine::grammar::TokenGrammar>(json_gbnf(), qwen2_pieces());
    for (const int32_t token : qwen2_vocab().tokenize(text, false, false)) grammar->accept(token);
    return grammar;
}

// The three points: before the document, inside a string, after a number inside an object.
const char *const kPoints[] = {"", "{\"name\": \"Ada", "{\"name\": \"Ada\", \"age\": 36"};

// A state met for the first time: each iteration a new grammar, which remembers nothing.
void bm_every_token(benchmark::State &state) {
    const auto n = size_t(qwen2_vocab().n_tokens());
    std::vector<uint8_t> allowed(n);
    for (auto _ : state) {
        state.PauseTiming();
        const auto grammar = json_after(kPoints[state.range(0)]);
        state.ResumeTiming();
        grammar->mark_allowed(allowed);
        benchmark::DoNotOptimize(allowed.data());
    }
    state.counters["allowed"] = double(std::count(allowed.begin(), allowed.end(), 1));
    state.counters["tokens"] = double(n);
}
BENCHMARK(bm_every_token)
    ->Name("grammar/every_token")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);

// A state the grammar has marked before (inside a string, after every token of it).
void bm_every_token_remembered(benchmark::State &state) {
    const auto grammar = json_after(kPoints[state.range(0)]);
    std::vector<uint8_t> allowed(size_t(qwen2_vocab().n_tokens()));
    grammar->mark_allowed(allowed);
    for (auto _ : state) {
        grammar->mark_allowed(allowed);
        benchmark::DoNotOptimize(allowed.data());
    }
}
BENCHMARK(bm_every_token_remembered)
    ->Name("grammar/every_token_remembered")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMicrosecond);

// A whole document drawn with random logits (a random-weight model's): the sampler under the
// server's default sampling, up to 256 tokens, the time per token ("tokens"). range(0): 0 no
// grammar (the sampler's own cost), 1 grammars/json.gbnf (random picks open a string and stay in
// it, where nearly every token is allowed), 2 a JSON Schema for a list of integers (nearly every
// pick refused: digits, commas and brackets are a few hundred tokens of 151,936), the worst case.
// refused_share: how often the likeliest token was refused.
void bm_random_document(benchmark::State &state) {
    const auto n = size_t(qwen2_vocab().n_tokens());
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::vector<float>> logits(16, std::vector<float>(n));
    for (auto &row : logits) {
        for (float &l : row) l = normal(rng);
    }
    const engine::grammar::Grammar integers = engine::grammar::parse_gbnf(
        engine::grammar::json_schema_to_gbnf(R"({"type": "array", "items": {"type": "integer"}})"));
    const engine::grammar::Grammar *gbnf = state.range(0) == 1   ? &json_gbnf()
                                           : state.range(0) == 2 ? &integers
                                                                 : nullptr;
    constexpr int kTokens = 256;
    int64_t refused = 0, drawn = 0;
    for (auto _ : state) {
        std::unique_ptr<engine::grammar::TokenGrammar> grammar;
        if (gbnf != nullptr) {
            grammar = std::make_unique<engine::grammar::TokenGrammar>(*gbnf, qwen2_pieces());
        }
        engine::Sampler sampler({.seed = 3});
        for (int i = 0; i < kTokens; ++i) {
            const std::vector<float> &row = logits[size_t(i) % logits.size()];
            if (grammar != nullptr) {
                const auto best = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
                refused += grammar->allows(best) ? 0 : 1;
            }
            ++drawn;
            const int32_t token = sampler.sample(row, grammar.get());
            sampler.accept(token);
            if (qwen2_vocab().is_eog(token)) break;
            if (grammar != nullptr) grammar->accept(token);
        }
    }
    state.counters["tokens"] = benchmark::Counter(
        double(drawn), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["refused_share"] = double(refused) / double(drawn);
}
BENCHMARK(bm_random_document)
    ->Name("grammar/random_document")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);

void bm_first_pick(benchmark::State &state) {
    const auto grammar = json_after(kPoints[state.range(0)]);
    const std::vector<int32_t> next =
        qwen2_vocab().tokenize(state.range(0) == 1 ? " Lovelace" : ",", false, false);
    for (auto _ : state) benchmark::DoNotOptimize(grammar->allows(next.front()));
}
BENCHMARK(bm_first_pick)
    ->Name("grammar/first_pick")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMicrosecond);

// 0: a two-property schema; 1: a one-character grammar, to tell the grammar's part from the
// vocabulary's (its pieces and their index).
const std::string kSetupSchema = R"({"type": "object", "properties": {"name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150}}, "required": ["name", "age"]})";
std::string setup_gbnf(int64_t which) {
    return which == 0 ? engine::grammar::json_schema_to_gbnf(kSetupSchema)
                      : std::string("root ::= \"a\"\n");
}

void bm_setup(benchmark::State &state) {
    const engine::Vocab &vocab = qwen2_vocab();
    for (auto _ : state) {
        auto grammar = engine::grammar::TokenGrammar::for_vocab(
            engine::grammar::parse_gbnf(setup_gbnf(state.range(0))), vocab);
        benchmark::DoNotOptimize(grammar.get());
    }
}
BENCHMARK(bm_setup)->Name("grammar/setup")->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

// The same with the vocabulary's pieces built once and shared, as `loom serve` keeps them: what
// a request pays before its first token.
void bm_setup_shared(benchmark::State &state) {
    const auto pieces = engine::grammar::VocabPieces::of(qwen2_vocab());
    for (auto _ : state) {
        auto grammar = std::make_unique<engine::grammar::TokenGrammar>(
            engine::grammar::parse_gbnf(setup_gbnf(state.range(0))), pieces);
        benchmark::DoNotOptimize(grammar.get());
    }
}
BENCHMARK(bm_setup_shared)
    ->Name("grammar/setup_shared")
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace loom

BENCHMARK_MAIN();
