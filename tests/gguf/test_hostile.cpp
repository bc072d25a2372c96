// Hostile files: each corruption of a valid file is rejected with a loom::Error that names the
// problem (never a crash), through memory and through a mapped file; plus a sweep of single-byte
// corruptions of the whole directory, and limits that need files of their own.
#include <fstream>
#include <regex>

#include "tests/gguf/field_map.h"
#include "tests/gguf/gguf_test_util.h"
#include "tests/gguf/hostile_files.h"

namespace loom::gguf {
namespace {

using testing::hostile_files;
using testing::parse_error;
using testing::RawFile;
using testing::TempDir;
using testing::valid_base_file;

TEST(GgufHostile, TheBaseFileIsValid) {
    const Contents c = parse(valid_base_file());
    EXPECT_EQ(c.metadata.size(), 8u);
    EXPECT_EQ(c.tensors.size(), 3u);
}

TEST(GgufHostile, EveryCorruptionIsRejectedWithTheRightMessage) {
    const std::vector<testing::HostileFile> corpus = hostile_files();
    EXPECT_GE(corpus.size(), 50u);
    for (const testing::HostileFile &h : corpus) {
        SCOPED_TRACE(h.name);
        const std::string message = parse_error(h.bytes);
        ASSERT_FALSE(message.empty()) << "accepted";
        EXPECT_EQ(message.rfind("[gguf] ", 0), 0u) << message;
        EXPECT_TRUE(std::regex_search(message, std::regex(h.expected)))
            << message << "\n  expected to match: " << h.expected;
        EXPECT_NE(message.find(" at byte "), std::string::npos) << message;
    }
}

TEST(GgufHostile, MappedFilesAreRejectedWithTheirPath) {
    TempDir dir;
    const std::vector<testing::HostileFile> corpus = hostile_files();
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string path = (dir.path() / ("hostile-" + std::to_string(i))).string();
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char *>(corpus[i].bytes.data()),
                   std::streamsize(corpus[i].bytes.size()));
        try {
            File file(path);
            ADD_FAILURE() << corpus[i].name << ": accepted";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find(path + ": "), std::string::npos) << e.what();
        }
    }
}

TEST(GgufHostile, ZeroTensorsMakeTheRestTrailingBytes) {
    const std::vector<std::byte> base = valid_base_file();
    const auto fields = testing::map_fields(base);
    std::vector<std::byte> bytes = base;
    std::memset(bytes.data() + testing::field(fields, "n_tensors").at, 0, 8);
    const Contents c = parse(bytes);
    EXPECT_TRUE(c.tensors.empty());
    EXPECT_EQ(c.metadata.size(), 8u);
}

// Every byte of the header and directory set to values that break fields in different ways:
// the reader may accept the result, but rejects it with a loom::Error if anything else.
TEST(GgufHostile, SingleByteCorruptionsOfTheDirectory) {
    const std::vector<std::byte> base = valid_base_file();
    const uint64_t data_offset = parse(base).data_offset;
    size_t rejected = 0, total = 0;
    for (uint64_t i = 0; i < data_offset; ++i) {
        for (int v : {0x00, 0x01, 0x7f, 0x80, 0xff, (int(base[i]) + 1) & 0xff}) {
            if (std::byte(v) == base[i]) continue;
            std::vector<std::byte> bytes = base;
            bytes[i] = std::byte(v);
            ++total;
            rejected += !parse_error(bytes).empty();
        }
    }
    EXPECT_GT(rejected, total / 2) << rejected << " of " << total << " corruptions rejected";
}

TEST(GgufHostile, KeyLongerThanTheLimit) {
    RawFile f;
    f.header(3, 0, 1).put_string(std::string(kMaxKeyLength + 1, 'k')).put(uint32_t(0));
    f.put(uint8_t(1));
    EXPECT_NE(parse_error(f.bytes).find("key 0 at byte 24: key length 65536 exceeds the limit"),
              std::string::npos)
        << parse_error(f.bytes);
}

TEST(GgufHostile, TensorNameLongerThanTheLimit) {
    RawFile f;
    f.header(3, 1, 0).put_string(std::string(64, 'n')).put(uint32_t(1)).put(uint64_t(1));
    f.put(uint32_t(0)).put(uint64_t(0)).pad_to(32).put(float(1));
    EXPECT_NE(parse_error(f.bytes).find("tensor name length 64 exceeds the limit 63"),
              std::string::npos)
        << parse_error(f.bytes);
}

TEST(GgufHostile, ArraysNestedTooDeep) {
    for (int depth : {kMaxArrayDepth, kMaxArrayDepth + 1}) {
        RawFile f;
        f.header(3, 0, 1).put_string("deep").put(uint32_t(ValueType::array));
        for (int i = 0; i < depth; ++i) f.put(uint32_t(ValueType::array)).put(uint64_t(1));
        f.put(uint32_t(ValueType::u8)).put(uint64_t(1)).put(uint8_t(7));
        const std::string error = parse_error(f.bytes);
        if (depth <= kMaxArrayDepth) {
            EXPECT_EQ(error, "");
        } else {
            EXPECT_NE(error.find("key 0 'deep' element 0 at byte"), std::string::npos) << error;
            EXPECT_NE(error.find("arrays nested more than 8 levels deep"), std::string::npos);
        }
    }
}

TEST(GgufHostile, Version1CountsAreThirtyTwoBits) {
    RawFile f(/*v1=*/true);
    f.header(1, 0xffffffff, 0);
    EXPECT_NE(parse_error(f.bytes).find("header at byte 8: n_tensors 4294967295 cannot fit"),
              std::string::npos)
        << parse_error(f.bytes);
    RawFile g(/*v1=*/true);
    g.header(1, 0, 1).put_string("k").put(uint32_t(ValueType::string)).put(uint32_t(0xffffffff));
    EXPECT_NE(parse_error(g.bytes).find("key 0 'k' at byte 25: string length 4294967295 runs past"),
              std::string::npos)
        << parse_error(g.bytes);
}

TEST(GgufHostile, FilesWithoutTensorsMayEndBeforeTheDataOffset) {
    RawFile f;
    f.header(3, 0, 1).put_string("general.architecture").put(uint32_t(ValueType::string));
    f.put_string("bert");
    ASSERT_NE(f.bytes.size() % 32, 0u);
    const Contents c = parse(f.bytes);
    EXPECT_GT(c.data_offset, c.file_size);

    RawFile g;  // the same with a tensor: its data cannot be there
    g.header(3, 1, 0).put_string("t").put(uint32_t(1)).put(uint64_t(1));
    g.put(uint32_t(0)).put(uint64_t(0));
    EXPECT_NE(parse_error(g.bytes).find("data section at byte 57: the data section starts at byte "
                                        "64 (the directory's end aligned to 32), past the end"),
              std::string::npos)
        << parse_error(g.bytes);
}

}  // namespace
}  // namespace loom::gguf
