// ReasoningSplit against a plain reference over the whole text: the same parts whatever the
// chunks the text streams in (every cut into two, and byte by byte).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "tools/loom/serve/reasoning.h"

namespace loom::serve {
namespace {

std::string lstrip(std::string s) {
    s.erase(0, s.find_first_not_of(" \n\r\t") == std::string::npos
                   ? s.size()
                   : s.find_first_not_of(" \n\r\t"));
    return s;
}

// The whole answer at once: an optional "<think>" after leading whitespace (or none needed when
// the prompt opened the block), the reasoning up to "</think>", then the content; whitespace
// after either tag dropped.
std::pair<std::string, std::string> reference(const std::string &text, bool open) {
    std::string s = text;
    if (!open) {
        if (!lstrip(s).starts_with("<think>")) return {"", s};
        s = lstrip(s).substr(7);
    }
    const size_t close = s.find("</think>");
    if (close == std::string::npos) return {lstrip(s), ""};
    return {lstrip(s.substr(0, close)), lstrip(s.substr(close + 8))};
}

std::pair<std::string, std::string> streamed(const std::vector<std::string> &pieces, bool open) {
    ReasoningSplit split(open);
    std::string reasoning, content;
    for (const std::string &p : pieces) {
        const auto parts = split.push(p);
        reasoning += parts.reasoning;
        content += parts.content;
    }
    const auto rest = split.finish();
    return {reasoning + rest.reasoning, content + rest.content};
}

TEST(ReasoningSplit, AnyChunkingGivesTheWholeTextsParts) {
    const char *texts[] = {"<think>a</think>b",
                           "  <think>\nI think.\n</think>\n\nThe answer.",
                           "no thinking here",
                           "<thi",
                           "<think>never closed",
                           "</think>after",
                           "I think.</think>The answer.",
                           "<think",
                           "a <think> b </think> c",
                           "<think></think>",
                           "",
                           "\n\n",
                           "<think>x</thin",
                           "<think>a</think>b</think>c"};
    for (const char *t : texts) {
        const std::string text = t;
        for (const bool open : {false, true}) {
            const auto want = reference(text, open);
            SCOPED_TRACE(text + (open ? " (open)" : ""));
            EXPECT_EQ(streamed({text}, open), want);
            for (size_t cut = 0; cut <= text.size(); ++cut) {
                EXPECT_EQ(streamed({text.substr(0, cut), text.substr(cut)}, open), want) << cut;
            }
            std::vector<std::string> bytes;
            for (const char c : text) bytes.emplace_back(1, c);
            EXPECT_EQ(streamed(bytes, open), want);
        }
    }
    EXPECT_EQ(reference("<think>a</think>b", false),
              std::make_pair(std::string("a"), std::string("b")));
    EXPECT_EQ(reference("I think.</think>The answer.", true),
              std::make_pair(std::string("I think."), std::string("The answer.")));
}

TEST(ReasoningSplit, PromptsThatOpenTheBlock) {
    EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
    EXPECT_TRUE(prompt_opens_reasoning("assistant: <think>"));
    EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
    EXPECT_FALSE(prompt_opens_reasoning(""));
}

}  // namespace
}  // namespace loom::serve
