// A grammar over tokens, through the Sampler: every text sampled under the JSON grammar from
// random logits parses (nlohmann::json's parser is the reference), greedy picks the likeliest
// allowed token, and a grammar no token can continue is an error, not a wrong token.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/token_grammar.h"
#include "engine/sampling/sampler.h"
#include "engine/vocab/vocab.h"
#include "loom/error.h"
#include "loom/gguf.h"

namespace loom::engine::grammar {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A small vocabulary: every printable ASCII character, a newline and a tab, some longer pieces
// that cross the grammar's boundaries, the halves of a two-byte character, an end token and a
// control token (no bytes).
struct TestVocab {
    std::vector<std::string> pieces;
    std::vector<bool> ends;
    int32_t end = -1, control = -1;

    TestVocab() {
        for (char c = 0x20; c < 0x7F; ++c) pieces.emplace_back(1, c);
        for (const char *p :
             {"\n", "\t",  "true", "false", "null", "{\"", "\":",  "\",",  "},", "],",
              "12", "3.5", "e-",   "\\u00", "ab",   "  ",  "\xce", "\xb1", "é",  "\"}"}) {
            pieces.emplace_back(p);
        }
        ends.assign(pieces.size(), false);
        end = add("", true);
        control = add("", false);
    }
    int32_t add(const std::string &piece, bool is_end) {
        pieces.push_back(piece);
        ends.push_back(is_end);
        return int32_t(pieces.size() - 1);
    }
    int32_t id_of(const std::string &piece) const {
        for (size_t i = 0; i < pieces.size(); ++i) {
            if (pieces[i] == piece && !ends[i]) return int32_t(i);
        }
        return -1;
    }
};

Grammar json_grammar() {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/grammars/json.gbnf");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (text.empty()) ADD_FAILURE() << "grammars/json.gbnf is missing";
    return parse_gbnf(text);
}

TEST(TokenGrammar, EveryTextSampledUnderTheJsonGrammarParses) {
    const TestVocab vocab;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.5f);
    // Closing pieces and the end token are favoured so that most texts end within the limit.
    std::vector<float> bias(vocab.pieces.size(), 0.0f);
    for (const char *p : {"\"", "}", "]", "\"}"}) bias[size_t(vocab.id_of(p))] = 2.5f;
    bias[size_t(vocab.end)] = 4.0f;
    int finished = 0;
    for (uint64_t seed = 0; seed < 60; ++seed) {
        TokenGrammar grammar(json_grammar(),
                             std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends));
        Sampler sampler(
            {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = seed});
        std::string text;
        bool ended = false;
        for (int i = 0; i < 400 && !ended; ++i) {
            std::vector<float> logits(vocab.pieces.size());
            for (size_t t = 0; t < logits.size(); ++t) logits[t] = normal(rng) + bias[t];
            const int32_t token = sampler.sample(logits, &grammar);
            ASSERT_NE(token, vocab.control);
            grammar.accept(token);
            ended = token == vocab.end;
            if (!ended) text += vocab.pieces[size_t(token)];
        }
        if (!ended) continue;
        ++finished;
        EXPECT_TRUE(nlohmann::json::accept(text)) << "seed " << seed << ": '" << text << "'";
    }
    EXPECT_GE(finished, 45);
}

TEST(TokenGrammar, GreedyPicksTheLikeliestAllowedToken) {
    const TestVocab vocab;
    TokenGrammar grammar(json_grammar(),
                         std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends));
    grammar.accept(vocab.id_of("{\""));
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    Sampler sampler({.temperature = 0.0f});
    for (int step = 0; step < 20; ++step) {
        std::vector<float> logits(vocab.pieces.size());
        for (float &l : logits) l = normal(rng);
        int32_t best = -1;
        for (size_t t = 0; t < logits.size(); ++t) {
            if (grammar.allows(int32_t(t)) && (best < 0 || logits[t] > logits[size_t(best)]))
                best = int32_t(t);
        }
        ASSERT_GE(best, 0);
        const int32_t token = sampler.sample(logits, &grammar);
        ASSERT_EQ(token, best) << "step " << step;
        grammar.accept(token);
    }
}

// mark_allowed remembers what it found in the last states it met: along random texts under the
// JSON grammar, which come back to the same states inside strings and numbers, every marking
// must be the one a new grammar (nothing remembered) makes after the same tokens, and the one
// allows() gives token by token.
TEST(TokenGrammar, MarkingARememberedStateIsMarkingAfresh) {
    const TestVocab vocab;
    const auto pieces = std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends);
    std::mt19937 rng(5);
    for (int text = 0; text < 20; ++text) {
        TokenGrammar grammar(json_grammar(), pieces);
        std::vector<int32_t> tokens;
        for (int step = 0; step < 60; ++step) {
            std::vector<uint8_t> remembered(vocab.pieces.size());
            grammar.mark_allowed(remembered);
            TokenGrammar fresh(json_grammar(), pieces);
            for (const int32_t t : tokens) fresh.accept(t);
            std::vector<uint8_t> afresh(vocab.pieces.size());
            fresh.mark_allowed(afresh);
            ASSERT_EQ(remembered, afresh) << "text " << text << ", step " << step;
            std::vector<int32_t> allowed;
            for (size_t t = 0; t < remembered.size(); ++t) {
                ASSERT_EQ(remembered[t] != 0, grammar.allows(int32_t(t))) << t;
                if (remembered[t] != 0 && int32_t(t) != vocab.end) allowed.push_back(int32_t(t));
            }
            if (allowed.empty()) break;
            const int32_t token = allowed[rng() % allowed.size()];
            grammar.accept(token);
            tokens.push_back(token);
        }
    }
}

TEST(TokenGrammar, EndTokensOnlyWhereTheTextIsWhole) {
    const TestVocab vocab;
    TokenGrammar grammar(parse_gbnf("root ::= \"ab\" \"c\"?"),
                         std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends));
    EXPECT_FALSE(grammar.allows(vocab.end));
    EXPECT_FALSE(grammar.allows(vocab.control));
    EXPECT_TRUE(grammar.allows(vocab.id_of("ab")));
    EXPECT_TRUE(grammar.allows(vocab.id_of("a")));
    EXPECT_FALSE(grammar.allows(vocab.id_of("b")));
    EXPECT_THROW(grammar.accept(vocab.end), Error);
    grammar.accept(vocab.id_of("ab"));
    EXPECT_TRUE(grammar.complete());
    EXPECT_TRUE(grammar.allows(vocab.end));
    EXPECT_TRUE(grammar.allows(vocab.id_of("c")));
    EXPECT_FALSE(grammar.allows(-1));
    EXPECT_FALSE(grammar.allows(int32_t(vocab.pieces.size())));
}

// mark_allowed's walk over every piece at once against allows() token by token: on the test
// vocabulary along sampled texts, and on Qwen2's 151,646 real pieces at points of a document.
void expect_same_marks(const TokenGrammar &grammar, size_t n, const std::string &where) {
    std::vector<uint8_t> marked(n + 3, 7);  // more logits than tokens: the extra ones refused
    grammar.mark_allowed(marked);
    for (size_t id = 0; id < n + 3; ++id) {
        ASSERT_EQ(marked[id] != 0, id < n && grammar.allows(int32_t(id)))
            << where << ", token " << id;
    }
}

TEST(TokenGrammar, MarkingEveryTokenAgreesWithAskingForEach) {
    const TestVocab vocab;
    std::mt19937 rng(5);
    for (int text = 0; text < 20; ++text) {
        TokenGrammar grammar(json_grammar(),
                             std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends));
        for (int step = 0; step < 30; ++step) {
            expect_same_marks(grammar, vocab.pieces.size(), "step " + std::to_string(step));
            std::vector<int32_t> allowed;
            for (size_t t = 0; t < vocab.pieces.size(); ++t) {
                if (grammar.allows(int32_t(t)) && int32_t(t) != vocab.end)
                    allowed.push_back(int32_t(t));
            }
            if (allowed.empty()) break;
            grammar.accept(allowed[rng() % allowed.size()]);
        }
    }
    const std::string path =
        std::string(LOOM_SOURCE_DIR) + "/../shared/models/vocab/ggml-vocab-qwen2.gguf";
    const gguf::File file(path);
    const Vocab qwen2 = Vocab::from_gguf(file);
    for (const char *text :
         {"", "{\"name\": \"Ada", "{\"name\": \"Ada\", \"age\": 36", "[\"\xce"}) {
        auto grammar = TokenGrammar::for_vocab(json_grammar(), qwen2);
        std::string fed;
        for (const int32_t token : qwen2.tokenize(text, false, false)) {
            grammar->accept(token);
            fed += qwen2.token_to_piece(token, false);
        }
        expect_same_marks(*grammar, size_t(qwen2.n_tokens()), "after '" + fed + "'");
    }
}

TEST(TokenGrammar, NoAllowedTokenIsAnError) {
    const TestVocab vocab;
    TokenGrammar grammar(parse_gbnf("root ::= \"\\u0100\""),
                         std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends));
    Sampler sampler({.temperature = 0.0f});
    std::vector<float> logits(vocab.pieces.size(), 0.0f);
    try {
        sampler.sample(logits, &grammar);
        FAIL() << "no token was refused";
    } catch (const Error &e) {
        EXPECT_EQ(std::string(e.what()), "[grammar] no token of the " +
                                             std::to_string(vocab.pieces.size()) +
                                             " can continue the text");
    }
    // Allowed tokens at -inf are the sampler's error: nothing can be drawn.
    TokenGrammar json(json_grammar(),
                      std::make_shared<const VocabPieces>(vocab.pieces, vocab.ends));
    for (size_t t = 0; t < logits.size(); ++t) logits[t] = json.allows(int32_t(t)) ? -kInf : 1.0f;
    EXPECT_THROW(sampler.sample(logits, &json), Error);
}

}  // namespace
}  // namespace loom::engine::grammar
