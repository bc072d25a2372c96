// Every render is bounded: templates that would loop for ever, recurse without end, or build
// output, strings or lists without limit fail quickly with the bound in the message.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/engine/jinja/test_support.h"

namespace loom::engine::jinja {
namespace {

using testing::render_error;

// The error of `source`, which must come within a few seconds.
std::string bounded_error(const std::string &source, const RenderLimits &limits = {}) {
    const auto start = std::chrono::steady_clock::now();
    const std::string error = render_error(source, {}, limits);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 10.0) << source;
    EXPECT_FALSE(error.empty()) << source << " rendered";
    return error;
}

TEST(JinjaBounds, LoopIterations) {
    const std::string error = bounded_error(
        "{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}");
    EXPECT_NE(error.find("more than 1000000 loop iterations"), std::string::npos) << error;
    RenderLimits small;
    small.max_loop_iterations = 10;
    EXPECT_NE(
        bounded_error("{% for i in range(11) %}{% endfor %}", small).find("more than 10 loop"),
        std::string::npos);
}

TEST(JinjaBounds, Recursion) {
    const std::string error =
        bounded_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    EXPECT_NE(error.find("macro calls nest more than 100 deep"), std::string::npos) << error;
    const std::string loop = bounded_error(
        "{% set ns = namespace(x=[]) %}{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}");
    EXPECT_NE(loop.find("recursive loops nest more than 100 deep"), std::string::npos) << loop;
}

TEST(JinjaBounds, OutputSize) {
    RenderLimits small;
    small.max_output_bytes = 1000;
    const std::string error =
        bounded_error("{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", small);
    EXPECT_NE(error.find("the output would pass 1000 bytes"), std::string::npos) << error;
}

// An empty sequence repeated any number of times is empty at once, as in Python (found by the
// fuzzer: the repetition looped 10^18 times appending nothing).
TEST(JinjaBounds, AnEmptySequenceRepeatedIsEmptyAtOnce) {
    EXPECT_EQ(testing::render("[{{ '' * 1000000000000000000 }}]"), "[]");
    EXPECT_EQ(testing::render("{{ ([] * 1000000000000000000)|length }}"), "0");
    EXPECT_EQ(testing::render("{{ 1000000000000000000 * () }}"), "()");
}

TEST(JinjaBounds, StringsAndListsCannotGrowWithoutLimit) {
    EXPECT_NE(bounded_error("{{ 'x' * 10000000000 }}").find("longer than"), std::string::npos);
    EXPECT_NE(bounded_error("{% set ns = namespace(s='xx') %}{% for i in range(64) %}"
                            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                  .find("longer than"),
              std::string::npos);
    EXPECT_NE(bounded_error("{{ range(10000000000)|length }}").find("range() would hold more"),
              std::string::npos);
    EXPECT_NE(bounded_error("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}"
                            "{% set ns.l = [ns.l, ns.l] %}{% endfor %}")
                  .find("more than"),
              std::string::npos);
}

TEST(JinjaBounds, Steps) {
    RenderLimits small;
    small.max_steps = 10000;
    const std::string error =
        bounded_error("{% for i in range(5000) %}{{ i * 2 }}{{ [i] == [i] }}{% endfor %}", small);
    EXPECT_NE(error.find("more than 10000 steps"), std::string::npos) << error;
}

TEST(JinjaBounds, NamespacesCannotNest) {
    EXPECT_NE(render_error("{% set ns = namespace() %}{% set ns.self = ns %}")
                  .find("a namespace cannot hold a namespace"),
              std::string::npos);
    EXPECT_NE(render_error("{% set ns = namespace() %}{{ [ns] }}").find("cannot be put in a list"),
              std::string::npos);
}

}  // namespace
}  // namespace loom::engine::jinja
