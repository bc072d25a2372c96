// The feature probes of tests/engine/jinja/probes: small templates over every statement,
// operator, filter, test, method and whitespace rule the engine has, each rendered by Python
// Jinja2 as transformers configures it (probes/generate.py wrote expected.json). Loom must give
// the same bytes, fail where Jinja2 failed, and carry raise_exception's message.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/jinja/json.h"
#include "tests/engine/jinja/test_support.h"

namespace loom::engine::jinja {
namespace {

const std::filesystem::path kProbes =
    std::filesystem::path(LOOM_SOURCE_DIR) / "tests/engine/jinja/probes";

TEST(JinjaProbes, EveryProbeMatchesJinja2) {
    const auto expected =
        nlohmann::ordered_json::parse(testing::read_file(kProbes / "expected.json"))["probes"];
    const Value context = parse_json(testing::read_file(kProbes / "context.json"));
    std::vector<std::pair<std::string, Value>> variables;
    for (const auto &[key, value] : context.dict().entries())
        variables.emplace_back(key.str(), value);
    int probes = 0;
    for (const auto &entry : std::filesystem::directory_iterator(kProbes)) {
        if (entry.path().extension() != ".jinja") continue;
        ++probes;
        const std::string name = entry.path().filename().string();
        SCOPED_TRACE(name);
        ASSERT_TRUE(expected.contains(name)) << "run probes/generate.py: no expected output";
        const auto &want = expected[name];
        const std::string source = testing::read_file(entry.path());
        if (want.contains("output")) {
            try {
                EXPECT_EQ(testing::render(source, variables), want["output"].get<std::string>());
            } catch (const TemplateError &e) {
                ADD_FAILURE() << e.what();
            }
            continue;
        }
        try {
            testing::render(source, variables);
            ADD_FAILURE() << "rendered, but Jinja2 failed: " << want.dump();
        } catch (const TemplateError &e) {
            if (want.contains("raised")) {
                EXPECT_TRUE(e.raised());
                EXPECT_EQ(e.message(), want["raised"].get<std::string>());
            }
        }
    }
    EXPECT_EQ(size_t(probes), expected.size());
    EXPECT_GE(probes, 100);
}

}  // namespace
}  // namespace loom::engine::jinja
