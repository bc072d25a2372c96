// The 24 real chat templates of ../shared/fixtures/chat-templates, each on its six
// conversations: Loom's output must be byte for byte the expected one (@huggingface/jinja's
// output where it rendered, else Python Jinja2's), and a case where both raised must fail, with
// the template's own message where it called raise_exception.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/chat/jinja_chat.h"
#include "engine/jinja/json.h"
#include "tests/engine/jinja/test_support.h"

namespace loom::engine::jinja {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(LOOM_SOURCE_DIR) / "../shared/fixtures/chat-templates";

TEST(JinjaFixtures, EveryCaseMatchesTheReference) {
    ASSERT_TRUE(std::filesystem::is_directory(kFixtures))
        << "the shared chat-template fixtures are missing: " << kFixtures;
    int templates = 0, cases = 0;
    for (const auto &entry : std::filesystem::directory_iterator(kFixtures)) {
        if (!std::filesystem::exists(entry.path() / "cases.json")) continue;
        ++templates;
        const std::string name = entry.path().filename().string();
        const auto spec =
            nlohmann::ordered_json::parse(testing::read_file(entry.path() / "cases.json"));
        const JinjaChatTemplate chat_template(testing::read_file(entry.path() / "template.jinja"),
                                              spec["variables"]["bos_token"].get<std::string>(),
                                              spec["variables"]["eos_token"].get<std::string>());
        for (const auto &c : spec["cases"]) {
            ++cases;
            SCOPED_TRACE(name + "/" + c["id"].get<std::string>());
            ChatRender chat;
            chat.messages = chat_messages_from_json(c["messages"].dump());
            chat.tools =
                c["tools"].is_null() ? Value::none() : chat_tools_from_json(c["tools"].dump());
            chat.add_generation_prompt = c["add_generation_prompt"].get<bool>();
            chat.now = testing::fixed_now();
            const auto &want = !c["output"].is_null() ? c["output"] : c["output_jinja2"];
            if (!want.is_null()) {
                EXPECT_EQ(chat_template.render_strict(chat), want.get<std::string>());
                continue;
            }
            try {
                chat_template.render_strict(chat);
                ADD_FAILURE() << "rendered, but both reference renderers failed: " << c["error"];
            } catch (const TemplateError &e) {
                if (c["error_source"] == "raise_exception") {
                    EXPECT_TRUE(e.raised()) << e.what();
                    EXPECT_EQ(e.message(), c["error"].get<std::string>());
                }
            }
        }
    }
    EXPECT_EQ(templates, 24);
    EXPECT_EQ(cases, 144);
}

}  // namespace
}  // namespace loom::engine::jinja
