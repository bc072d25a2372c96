// Replays tests/gguf/corpus: small inputs kept from fuzzing (docs/RELIABILITY.md), each with the
// message the reader gives for it in corpus/expected.txt. Every input is parsed from memory and
// opened as a mapped file; both must give that message (the file's with its path added), and a
// valid one must describe itself (text and JSON).
#include <fstream>
#include <iterator>
#include <map>

#include "tests/gguf/gguf_test_util.h"

namespace loom::gguf {
namespace {

std::vector<std::byte> read_file(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars((std::istreambuf_iterator<char>(in)), {});
    const auto *p = reinterpret_cast<const std::byte *>(chars.data());
    return {p, p + chars.size()};
}

// file name -> message without "[gguf] ", or "valid"
std::map<std::string, std::string> read_expected(const std::filesystem::path &path) {
    std::map<std::string, std::string> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        const size_t tab = line.find('\t');
        if (tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return out;
}

TEST(GgufCorpus, EveryKeptInputGivesItsRecordedOutcome) {
    const auto dir = std::filesystem::path(LOOM_SOURCE_DIR) / "tests" / "gguf" / "corpus";
    std::map<std::string, std::string> expected = read_expected(dir / "expected.txt");
    ASSERT_FALSE(expected.empty()) << dir / "expected.txt";
    const std::string prefix = "[gguf] ";
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".gguf") continue;
        const std::string name = entry.path().filename().string();
        SCOPED_TRACE(name);
        const auto it = expected.find(name);
        ASSERT_NE(it, expected.end()) << "not in expected.txt";
        const std::string want = it->second;
        expected.erase(it);

        const std::string from_memory = testing::parse_error(read_file(entry.path()));
        EXPECT_EQ(from_memory.empty() ? "valid" : from_memory.substr(prefix.size()), want);
        try {
            const File file(entry.path().string());
            EXPECT_EQ(want, "valid");
            EXPECT_FALSE(format_text(file.contents()).empty());
            EXPECT_FALSE(format_json(file.contents()).empty());
        } catch (const Error &e) {
            EXPECT_EQ(e.what(), prefix + entry.path().string() + ": " + want);
        }
    }
    for (const auto &[name, message] : expected) ADD_FAILURE() << "missing corpus file " << name;
}

}  // namespace
}  // namespace loom::gguf
