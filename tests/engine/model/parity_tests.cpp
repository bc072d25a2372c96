// Logits and greedy continuations against llama.cpp's, case by case (../shared/fixtures).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/context/context.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::all_logits;
using test::argmax;
using test::Fixture;
using test::load_fixture;
using test::nmse;

struct Options {
    DType kv_type = DType::F32;
    bool flash_attn = false;
};

Options options_of(const Fixture &f) {
    const auto &s = f.json["settings"];
    return {.kv_type = s["kv_type"] == "f16" ? DType::F16 : DType::F32,
            .flash_attn = s["flash_attn"].get<bool>()};
}

std::unique_ptr<Context> make_context(const Model &model, const Fixture &f, int64_t n_ubatch) {
    const Options o = options_of(f);
    return std::make_unique<Context>(model, ContextOptions{.n_ctx = 512,
                                                           .n_ubatch = n_ubatch,
                                                           .n_threads = 2,
                                                           .flash_attn = o.flash_attn,
                                                           .type_k = o.kv_type,
                                                           .type_v = o.kv_type});
}

struct Case {
    const char *name;
    double tolerance;  // NMSE of the logits, over all positions
    // Greedy tokens are compared up to the first step whose top-2 gap in llama.cpp's logits is
    // below this: ordering closer logits is within the differences `tolerance` allows.
    double greedy_gap = 1e-3;
    // The same for generation, one token per decode: Loom sums each product in one order for
    // any number of tokens, llama.cpp in another for one token than for many; where activations
    // are rounded to 8 bits, those ulps can move logits by ~1e-2 (see kNearTolerance).
    double decode_gap = 1e-3;
};

// Quantized products round the activations to 8 bits (BF16 ones to 8 mantissa bits), so a
// difference of one ulp in an input can move an activation to the next step and the logits by
// ~1e-2. Loom reproduces llama.cpp's x86 arithmetic exactly for the plain dot products of most
// types (NMSE ~1e-14 below, 0 for Q2_K, Q5_0, Q5_K, Q6_K and Q8_0), and the attention's scores,
// probabilities and V products to the bit (they sum in llama.cpp's orders: SumOrder). Where the
// logits differ more, `loom logits --dump-tensors` against llama.cpp's own intermediate tensors
// shows where it starts: in llama.cpp's interleaved Q4_K kernel (K and Q of layer 0), and in
// Loom's interleaved Q4_1 kernel, which by choice sums each block exactly before scaling it where
// ggml scales 8 partial sums (Q4_1's unsigned levels and minimums cancel largely, which amplifies
// those roundings: NMSE 6e-5). Q3_K (8e-6), Q5_1 (1e-7) and BF16 (6e-6) were once put down to the
// attention's order; they stayed when it became llama.cpp's, and are not traced again yet. Those
// cases get this tolerance and gap.
constexpr double kNearTolerance = 5e-4;
constexpr double kQuantizedDecodeGap = 0.01;
constexpr double kNearGap = 0.1;

class Parity : public ::testing::TestWithParam<Case> {};

TEST_P(Parity, LogitsAtEveryPosition) {
    const Fixture f = load_fixture(GetParam().name);
    ASSERT_FALSE(f.logits.empty());
    const auto model = Model::load(f.model_path);
    auto ctx = make_context(*model, f, 512);
    const std::vector<float> got = all_logits(*ctx, f.tokens);
    ASSERT_EQ(got.size(), f.logits.size());
    EXPECT_LT(nmse(got, f.logits), GetParam().tolerance);
    for (size_t i = 0; i < f.tokens.size(); ++i) {
        const int64_t n = f.n_vocab;
        EXPECT_LT(nmse({got.data() + i * n, size_t(n)}, f.row(int64_t(i))),
                  10 * GetParam().tolerance)
            << "position " << i;
    }
}

struct Greedy {
    std::vector<int32_t> prompt, tokens;
    std::vector<double> gaps;  // llama.cpp's top-1 minus top-2 logit at each step
};

Greedy greedy_of(const Fixture &f) {
    const auto &g = f.json["greedy"];
    return {g["prompt_tokens"].get<std::vector<int32_t>>(), g["tokens"].get<std::vector<int32_t>>(),
            g["top2_gaps"].get<std::vector<double>>()};
}

// Generation as llama.cpp ran it: the prompt in one batch, then one token per decode; the same
// tokens up to the first step whose top-2 gap is below 1e-3, where an order within float noise
// may flip (or decode_gap). Only for the cases whose logits agree to that noise.
class ExactParity : public Parity {};

TEST_P(ExactParity, GreedyContinuation) {
    const Fixture f = load_fixture(GetParam().name);
    const Greedy g = greedy_of(f);
    const auto model = Model::load(f.model_path);
    auto ctx = make_context(*model, f, 512);
    Batch batch;
    for (size_t i = 0; i < g.prompt.size(); ++i) {
        batch.add(g.prompt[i], Pos(i), 0, i + 1 == g.prompt.size());
    }
    ctx->decode(batch);
    Pos pos = Pos(g.prompt.size());
    for (size_t step = 0; step < g.tokens.size(); ++step) {
        if (g.gaps[step] < GetParam().decode_gap) break;
        const int32_t next = argmax(ctx->logits(0));
        ASSERT_EQ(next, g.tokens[step]) << "step " << step;
        batch.clear();
        batch.add(next, pos++, 0, true);
        ctx->decode(batch);
    }
}

// Every step of llama.cpp's generation on its own: the prompt and llama.cpp's 32 tokens in one
// batch, and at each step whose top-2 gap is at least the case's greedy_gap (and 0.01), the same
// choice. Steps do not depend on earlier ones here, so one near-tie does not end the comparison.
// The 0.01: llama.cpp generated one token per decode, and a position's logits computed in a
// batch differ from those by float noise (other kernels for one column), which an 8-bit
// activation step can amplify to ~1e-2.
TEST_P(Parity, GreedyStepsTeacherForced) {
    const Fixture f = load_fixture(GetParam().name);
    const Greedy g = greedy_of(f);
    const auto model = Model::load(f.model_path);
    auto ctx = make_context(*model, f, 512);
    Batch batch;
    std::vector<int32_t> all = g.prompt;
    all.insert(all.end(), g.tokens.begin(), g.tokens.end() - 1);
    for (size_t i = 0; i < all.size(); ++i) {
        batch.add(all[i], Pos(i), 0, i + 1 >= g.prompt.size());
    }
    ctx->decode(batch);
    int compared = 0;
    for (size_t step = 0; step < g.tokens.size(); ++step) {
        if (g.gaps[step] < std::max(GetParam().greedy_gap, 0.01)) continue;
        EXPECT_EQ(argmax(ctx->logits(int64_t(step))), g.tokens[step]) << "step " << step;
        ++compared;
    }
    EXPECT_GE(compared, 8) << "too few steps above the gap to say anything";
}

const Case kCases[] = {
    {"stories260K", 1e-6},
    {"stories260K-p200", 1e-6},
    {"stories260K-fa", 1e-5},     // llama.cpp rounds K and V to F16 for flash attention
    {"stories260K-kvf16", 1e-9},  // F16 KV cache (1.3e-11: the F32 weights' products)
    {"qwen2", 1e-6},
    {"qwen3", 1e-6},
    {"gpt2", 1e-6},
    {"llama-moe", 1e-6},
    {"qwen2moe", 1e-6},
    {"qwen3moe", 1e-6},
    {"deepseek2", 1e-6},
    {"deepseek2-kvb", 1e-6},
    {"qwen2-yarn", 1e-6},      // YaRN, positions past the original context
    {"deepseek2-yarn", 1e-6},  // YaRN with mscale_all_dim: DeepSeek's scores scaled by mscale^2
    {"granite", 1e-6},
    {"command-r", 1e-6},
    {"olmo2", 1e-6},
    {"phi3", 1e-6},
    {"gemma2", 1e-6},   // sliding window 8 on even layers, 67 tokens; soft-capped scores, logits
    {"gemma3", 1e-6},   // iSWA: window 8 on layers 0, 1, 3 with their own rotary base
    {"gpt-oss", 1e-6},  // MXFP4 experts, attention sinks, window 8 on even layers, YaRN
    {"llama-2-tiny-random", 1e-12},  // F16 weights
    {"llama-q-q4_0", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-q5_0", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-q2_k", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-q5_k", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-q5_k_m", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-q6_k", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-q8_0", 1e-12, 1e-3, kQuantizedDecodeGap},
    {"llama-q-f16", 1e-6, kNearGap},
    {"llama-q-bf16", kNearTolerance, kNearGap},
    {"llama-q-q4_1", kNearTolerance, kNearGap},
    {"llama-q-q5_1", kNearTolerance, kNearGap},
    {"llama-q-q3_k", kNearTolerance, kNearGap},
    {"llama-q-q4_k", kNearTolerance, kNearGap},
    {"llama-q-q4_k_m", kNearTolerance, kNearGap},
};

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
    std::string s = info.param.name;
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

// The cases whose logits agree with llama.cpp's to float noise.
std::vector<Case> exact_cases() {
    std::vector<Case> out;
    for (const Case &c : kCases) {
        if (c.greedy_gap <= 1e-3) out.push_back(c);
    }
    return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::ValuesIn(kCases), case_name);
INSTANTIATE_TEST_SUITE_P(Fixtures, ExactParity, ::testing::ValuesIn(exact_cases()), case_name);

}  // namespace
}  // namespace loom::engine
