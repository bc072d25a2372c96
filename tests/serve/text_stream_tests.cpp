// TextStream: what a streamed response may send after each piece.
#include <gtest/gtest.h>

#include "tools/loom/serve/text_stream.h"

namespace loom::serve {
namespace {

std::string feed(TextStream &s, const std::vector<std::string> &pieces) {
    std::string out;
    for (const auto &p : pieces) out += s.push(p);
    return out + s.finish();
}

TEST(TextStream, PassesTextThroughWithoutStops) {
    TextStream s;
    EXPECT_EQ(s.push("Hello"), "Hello");
    EXPECT_EQ(s.push(" world"), " world");
    EXPECT_EQ(s.finish(), "");
    EXPECT_FALSE(s.stopped());
}

TEST(TextStream, HoldsASplitCharacterUntilItIsWhole) {
    TextStream s;
    // "é" is C3 A9, "€" is E2 82 AC: pieces may end inside them.
    EXPECT_EQ(s.push("caf\xC3"), "caf");
    EXPECT_EQ(s.push("\xA9 \xE2\x82"), "\xC3\xA9 ");
    EXPECT_EQ(s.push("\xAC!"), "\xE2\x82\xAC!");
    EXPECT_EQ(s.push("\xF0\x9F"), "");
    EXPECT_EQ(s.finish(), "");  // an unfinished character is dropped
}

TEST(TextStream, StopsBeforeAStopStringSpanningPieces) {
    TextStream s({"\n\n", "END"});
    EXPECT_EQ(s.push("one E"), "one ");  // "E" may start "END"
    EXPECT_EQ(s.push("Nx"), "ENx");      // it did not
    EXPECT_EQ(s.push(" two\n"), " two");
    EXPECT_EQ(s.push("\nthree"), "");
    EXPECT_TRUE(s.stopped());
    EXPECT_EQ(s.push("more"), "");
    EXPECT_EQ(s.finish(), "");
}

TEST(TextStream, GivesBackHeldTextAtTheEnd) {
    TextStream s({"STOP"});
    EXPECT_EQ(feed(s, {"a S", "T"}), "a ST");
    EXPECT_FALSE(s.stopped());
}

TEST(TextStream, EmptyStopStringsAreIgnored) {
    TextStream s({""});
    EXPECT_EQ(feed(s, {"abc"}), "abc");
}

TEST(CompleteUtf8Prefix, CutsOnlyAnUnfinishedLastCharacter) {
    EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
    EXPECT_EQ(complete_utf8_prefix("ab\xC3"), 2u);
    EXPECT_EQ(complete_utf8_prefix("\xE2\x82\xAC"), 3u);
    EXPECT_EQ(complete_utf8_prefix("x\xF0\x9F\x98"), 1u);
    EXPECT_EQ(complete_utf8_prefix(""), 0u);
}

}  // namespace
}  // namespace loom::serve
