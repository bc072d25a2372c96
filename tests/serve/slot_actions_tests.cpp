// /slots/{id} requests: the action, and filenames that could leave --slot-save-path refused.
#include "tools/loom/serve/slot_actions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/loom/serve/request.h"

namespace loom::serve {
namespace {

TEST(SlotActionRequests, PlainNamesOnly) {
    for (const std::string &good :
         std::vector<std::string>{"a.bin", "slot-0_2024.state", "x", std::string(255, 'n')}) {
        EXPECT_TRUE(is_safe_filename(good)) << good;
    }
    for (const std::string &bad :
         std::vector<std::string>{"", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b", ".hidden",
                                  std::string("a\0b", 3), "a\nb", std::string(256, 'n')}) {
        EXPECT_FALSE(is_safe_filename(bad)) << bad;
    }
}

TEST(SlotActionRequests, ParsesTheActionAndJoinsTheFolder) {
    const SlotAction save = parse_slot_action(2, "save", R"({"filename": "a.bin"})", "/tmp/slots");
    EXPECT_EQ(save.kind, SlotAction::Kind::save);
    EXPECT_EQ(save.slot, 2);
    EXPECT_EQ(save.path, "/tmp/slots/a.bin");
    EXPECT_EQ(parse_slot_action(0, "restore", R"({"filename": "a.bin"})", "d").kind,
              SlotAction::Kind::restore);
    EXPECT_EQ(parse_slot_action(0, "erase", "", "d").kind, SlotAction::Kind::erase);
}

TEST(SlotActionRequests, BadRequestsAre400s) {
    const std::pair<std::string, std::string> cases[] = {
        {"delete", R"({"filename": "a"})"},
        {"save", "not json"},
        {"save", "[]"},
        {"save", R"({"name": "a"})"},
        {"save", R"({"filename": 3})"},
        {"restore", R"({"filename": "../../etc/x"})"},
        {"save", R"({"filename": "sub/a"})"}};
    for (const auto &[action, body] : cases) {
        try {
            parse_slot_action(0, action, body, "d");
            ADD_FAILURE() << "accepted " << action << " " << body;
        } catch (const RequestError &e) {
            EXPECT_EQ(e.status(), 400) << body;
        }
    }
}

}  // namespace
}  // namespace loom::serve
