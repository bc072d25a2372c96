// The usage and timings objects: OpenAI's counts, and llama-server's rates worked out from the
// counts and clocks (prompt tokens found cached are neither decoded nor timed).
#include <gtest/gtest.h>

#include "tools/loom/serve/responses.h"

namespace loom::serve {
namespace {

TEST(Responses, UsageCountsThePromptWithItsCachedPart) {
    const nlohmann::json u = usage_json({.n_prompt = 10, .n_generated = 5, .n_cached = 4});
    EXPECT_EQ(u["prompt_tokens"], 10);
    EXPECT_EQ(u["completion_tokens"], 5);
    EXPECT_EQ(u["total_tokens"], 15);
    EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 4);
}

TEST(Responses, TimingsAreLlamaServersRates) {
    const nlohmann::json t = timings_json(
        {.n_prompt = 10, .n_generated = 5, .n_cached = 4, .prompt_ms = 30, .predicted_ms = 100});
    EXPECT_EQ(t["cache_n"], 4);
    EXPECT_EQ(t["prompt_n"], 6);  // the 6 decoded in 30 ms
    EXPECT_DOUBLE_EQ(t["prompt_ms"].get<double>(), 30.0);
    EXPECT_DOUBLE_EQ(t["prompt_per_token_ms"].get<double>(), 5.0);
    EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 200.0);
    EXPECT_EQ(t["predicted_n"], 5);
    EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 20.0);
    EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 50.0);
}

TEST(Responses, TimingsOfNothingAreZeroNotInfinite) {
    const nlohmann::json t = timings_json({.n_prompt = 3, .n_cached = 3});
    EXPECT_EQ(t["prompt_n"], 0);
    EXPECT_EQ(t["prompt_per_token_ms"], 0.0);
    EXPECT_EQ(t["prompt_per_second"], 0.0);
    EXPECT_EQ(t["predicted_per_second"], 0.0);
}

}  // namespace
}  // namespace loom::serve
