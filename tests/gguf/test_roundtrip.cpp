// Writer -> reader round trips: every value type (scalars, strings, arrays of each type, nested
// arrays), every dtype of the traits table, alignments, and the same through a mapped file.
#include <cmath>
#include <limits>
#include <numeric>

#include "loom/backend.h"
#include "tests/gguf/gguf_test_util.h"

namespace loom::gguf {
namespace {

using testing::RawFile;
using testing::TempDir;

template <typename T>
Value limits_low() {
    return std::numeric_limits<T>::lowest();
}
template <typename T>
Value limits_high() {
    return std::numeric_limits<T>::max();
}

// One key per value type at both ends of its range, plus the awkward cases.
Metadata every_value_type() {
    Metadata m;
    m.set("u8.low", limits_low<uint8_t>());
    m.set("u8.high", limits_high<uint8_t>());
    m.set("i8.low", limits_low<int8_t>());
    m.set("i8.high", limits_high<int8_t>());
    m.set("u16.high", limits_high<uint16_t>());
    m.set("i16.low", limits_low<int16_t>());
    m.set("u32.high", limits_high<uint32_t>());
    m.set("i32.low", limits_low<int32_t>());
    m.set("f32.low", limits_low<float>());
    m.set("f32.inf", std::numeric_limits<float>::infinity());
    m.set("f32.denormal", std::numeric_limits<float>::denorm_min());
    m.set("bool.true", true);
    m.set("bool.false", false);
    m.set("string.empty", std::string());
    m.set("string.utf8", std::string("caf\xc3\xa9 \xe2\x96\x81token \xf0\x9f\x98\x80"));
    m.set("string.binary", std::string("a\0b\xff\n", 5));
    m.set("u64.high", limits_high<uint64_t>());
    m.set("i64.low", limits_low<int64_t>());
    m.set("f64.low", limits_low<double>());
    m.set("f64.pi", 3.141592653589793);

    m.set("array.u8", Array{std::vector<uint8_t>{0, 1, 255}});
    m.set("array.i8", Array{std::vector<int8_t>{-128, 0, 127}});
    m.set("array.u16", Array{std::vector<uint16_t>{0, 65535}});
    m.set("array.i16", Array{std::vector<int16_t>{-32768, 32767}});
    m.set("array.u32", Array{std::vector<uint32_t>{0, 4294967295u}});
    m.set("array.i32", Array{std::vector<int32_t>{-1, 2, -3}});
    m.set("array.f32", Array{std::vector<float>{0.5f, -1e30f, 1e-30f}});
    m.set("array.bool", Array{std::vector<bool>{true, false, true}});
    m.set("array.string", Array{std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"}});
    m.set("array.u64", Array{std::vector<uint64_t>{0, ~uint64_t(0)}});
    m.set("array.i64", Array{std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 1}});
    m.set("array.f64", Array{std::vector<double>{1e300, -0.0}});
    m.set("array.empty_f32", Array{std::vector<float>{}});
    m.set("array.empty_string", Array{std::vector<std::string>{}});
    m.set("array.nested", Array{std::vector<Array>{Array{std::vector<int32_t>{1, 2}},
                                                   Array{std::vector<std::string>{"x"}},
                                                   Array{std::vector<Array>{}}}});
    return m;
}

TEST(GgufRoundTrip, EveryValueTypeReadsBackIdentically) {
    Writer w;
    w.metadata() = every_value_type();
    const Contents c = parse(w.to_bytes());
    EXPECT_EQ(c.version, 3u);
    EXPECT_EQ(c.metadata, every_value_type());
    EXPECT_EQ(c.metadata.size(), every_value_type().size());
    // the order of keys is the order they were set in
    EXPECT_EQ(c.metadata.entries().front().key, "u8.low");
    EXPECT_EQ(c.metadata.entries().back().key, "array.nested");
    // every type id is represented
    std::vector<bool> seen(kValueTypeCount);
    for (const Metadata::Entry &e : c.metadata.entries()) seen[size_t(type_of(e.value))] = true;
    for (uint32_t t = 0; t < kValueTypeCount; ++t) EXPECT_TRUE(seen[t]) << "type " << t;
    EXPECT_TRUE(std::isinf(c.metadata.get<float>("f32.inf")));
    EXPECT_EQ(c.metadata.get<std::string>("string.binary").size(), 5u);
}

TEST(GgufRoundTrip, NanSurvivesBitForBit) {
    Writer w;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    w.set("f32.nan", nan);
    const Contents c = parse(w.to_bytes());
    const float back = c.metadata.get<float>("f32.nan");
    EXPECT_EQ(std::memcmp(&back, &nan, sizeof(float)), 0);
}

// Bytes 0, 1, 2, ... so that any misplaced or shifted tensor shows.
std::vector<std::byte> pattern(size_t n, uint8_t seed) {
    std::vector<std::byte> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = std::byte(uint8_t(i * 7 + seed));
    return out;
}

TEST(GgufRoundTrip, EveryDTypeAndRankReadsBackIdentically) {
    struct Case {
        std::string name;
        DType type;
        std::vector<int64_t> ne;
        std::vector<std::byte> data;
    };
    std::vector<Case> cases;
    const std::vector<std::vector<int64_t>> shapes = {{5}, {3, 7}, {2, 3, 4}, {1, 2, 1, 3}};
    for (int i = 0; i < kDTypeCount; ++i) {
        const DType type = DType(i);
        for (size_t s = 0; s < shapes.size(); ++s) {
            std::vector<int64_t> ne = shapes[s];
            ne[0] *= traits(type).block_size;  // whole blocks
            const int64_t n = std::accumulate(ne.begin(), ne.end(), int64_t(1), std::multiplies());
            const size_t bytes = row_size(type, n);
            cases.push_back({fmt::format("t.{}.{}", dtype_name(type), s), type, ne,
                             pattern(bytes, uint8_t(cases.size()))});
        }
    }
    Writer w;
    w.set("general.architecture", std::string("test"));
    for (const Case &k : cases) w.add_tensor(k.name, k.type, k.ne, k.data.data());
    const std::vector<std::byte> bytes = w.to_bytes();
    const Contents c = parse(bytes);

    ASSERT_EQ(c.tensors.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const TensorInfo &t = c.tensors[i];
        SCOPED_TRACE(cases[i].name);
        EXPECT_EQ(t.name, cases[i].name);
        EXPECT_EQ(t.type, cases[i].type);
        ASSERT_EQ(t.n_dims, int(cases[i].ne.size()));
        for (int d = 0; d < kMaxDims; ++d) {
            EXPECT_EQ(t.ne[d], d < t.n_dims ? cases[i].ne[size_t(d)] : 1);
        }
        EXPECT_EQ(t.offset % c.alignment, 0u);
        ASSERT_EQ(t.nbytes, cases[i].data.size());
        EXPECT_EQ(
            std::memcmp(bytes.data() + c.data_offset + t.offset, cases[i].data.data(), t.nbytes),
            0);
        EXPECT_EQ(c.find_tensor(t.name), &t);
    }
    EXPECT_EQ(c.find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, AlignmentSetsPaddingOfEveryTensor) {
    for (uint32_t alignment : {1u, 8u, 64u, 4096u}) {
        const auto a = pattern(12, 1), b = pattern(20, 2);
        Writer w;
        w.set("general.alignment", alignment);
        w.add_tensor("a", DType::F32, {3}, a.data());
        w.add_tensor("b", DType::I8, {20}, b.data());
        const std::vector<std::byte> bytes = w.to_bytes();
        const Contents c = parse(bytes);
        EXPECT_EQ(c.alignment, alignment);
        EXPECT_EQ(c.data_offset % alignment, 0u);
        EXPECT_EQ(c.tensors[1].offset, (12 + alignment - 1) / alignment * alignment);
        EXPECT_EQ(bytes.size() % alignment, 0u) << "the last tensor is padded too";
        EXPECT_EQ(std::memcmp(bytes.data() + c.data_offset + c.tensors[1].offset, b.data(), 20), 0);
    }
}

TEST(GgufRoundTrip, WriterRefusesWhatTheReaderWouldReject) {
    const float data[4] = {};
    Writer w;
    EXPECT_THROW(w.add_tensor("", DType::F32, {1}, data), Error);
    EXPECT_THROW(w.add_tensor(std::string(64, 'n'), DType::F32, {1}, data), Error);
    EXPECT_THROW(w.add_tensor("zero", DType::F32, {0}, data), Error);
    EXPECT_THROW(w.add_tensor("negative", DType::F32, {2, -1}, data), Error);
    EXPECT_THROW(w.add_tensor("five_dims", DType::F32, {1, 1, 1, 1, 1}, data), Error);
    EXPECT_THROW(w.add_tensor("overflow", DType::F32, {int64_t(1) << 62, 4}, data), Error);
    w.add_tensor("ok", DType::F32, {4}, data);
    EXPECT_THROW(w.add_tensor("ok", DType::F32, {4}, data), Error);

    Writer bad_alignment;
    bad_alignment.set("general.alignment", uint32_t(48));
    EXPECT_THROW(bad_alignment.to_bytes(), Error);
    Writer wrong_type_alignment;
    wrong_type_alignment.set("general.alignment", int32_t(32));
    EXPECT_THROW(wrong_type_alignment.to_bytes(), Error);
    Writer empty_key;
    empty_key.set("", true);
    EXPECT_THROW(empty_key.to_bytes(), Error);

    Array deep{std::vector<int32_t>{1}};
    for (int i = 0; i <= kMaxArrayDepth; ++i) deep = Array{std::vector<Array>{deep}};
    Writer too_deep;
    too_deep.set("deep", deep);
    EXPECT_THROW(too_deep.to_bytes(), Error);
}

TEST(GgufRoundTrip, WriterTakesAContextTensor) {
    Context ctx({.mem_size = 1 << 20});
    Tensor *t = set_name(ctx.new_tensor(DType::F16, {6, 2, 1, 1}), "weights");
    for (int i = 0; i < 12; ++i) static_cast<uint16_t *>(t->data)[i] = uint16_t(i * 1000);
    Writer w;
    w.add_tensor(t);
    const std::vector<std::byte> bytes = w.to_bytes();
    const Contents c = parse(bytes);
    ASSERT_EQ(c.tensors.size(), 1u);
    EXPECT_EQ(c.tensors[0].name, "weights");
    EXPECT_EQ(c.tensors[0].n_dims, 2) << "trailing dims of 1 are dropped";
    EXPECT_EQ(std::memcmp(bytes.data() + c.data_offset, t->data, 24), 0);

    Tensor *view = transpose(ctx, t);
    EXPECT_THROW(w.add_tensor(view), Error);
}

TEST(GgufFile, MappedFileGivesTensorsThatPointIntoIt) {
    TempDir dir;
    const auto a = pattern(4 * 6, 3), b = pattern(2 * 8, 4);
    Writer w;
    w.set("general.architecture", std::string("llama"));
    w.add_tensor("a", DType::F32, {3, 2}, a.data());
    w.add_tensor("b", DType::F16, {8}, b.data());
    const std::string path = (dir.path() / "model.gguf").string();
    w.write(path);

    const File file(path);
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(file.bytes().size(), std::filesystem::file_size(path));
    EXPECT_EQ(file.metadata().get<std::string>("general.architecture"), "llama");
    const std::span<const std::byte> b_data = file.tensor_data(*file.find_tensor("b"));
    EXPECT_EQ(std::memcmp(b_data.data(), b.data(), b.size()), 0);

    Context ctx({.mem_size = file.context_size(), .no_alloc = true});
    const std::vector<Tensor *> tensors = file.create_tensors(ctx);
    ASSERT_EQ(tensors.size(), 2u);
    EXPECT_STREQ(tensors[0]->name, "a");
    EXPECT_EQ(tensors[0]->ne[0], 3);
    EXPECT_EQ(tensors[0]->ne[1], 2);
    EXPECT_EQ(tensors[0]->nb[1], 12u);
    EXPECT_TRUE(tensors[0]->flags & kFlagParam);
    EXPECT_EQ(tensors[1]->data, b_data.data()) << "no copy: data points into the mapping";
    EXPECT_EQ(std::memcmp(tensors[0]->data, a.data(), a.size()), 0);
    EXPECT_EQ(tensors[1]->buffer, &file.buffer());
    EXPECT_TRUE(file.buffer().contains(tensors[1]));
    EXPECT_THROW(file.buffer().set_tensor(tensors[0], a.data(), 0, 4), Error) << "read-only";

    Context allocating({.mem_size = 1 << 20});
    EXPECT_THROW(file.create_tensors(allocating), Error);
}

TEST(GgufFile, OpenErrorsNameTheFile) {
    TempDir dir;
    const std::string missing = (dir.path() / "missing.gguf").string();
    try {
        File f(missing);
        FAIL() << "opened a missing file";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("cannot open '" + missing + "'"), std::string::npos);
    }
    EXPECT_THROW(File(dir.path().string()), Error) << "a directory";
    const std::string empty = (dir.path() / "empty.gguf").string();
    std::fclose(std::fopen(empty.c_str(), "wb"));
    try {
        File f(empty);
        FAIL() << "opened an empty file";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("0 bytes, too short"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(empty), std::string::npos) << e.what();
    }
}

TEST(GgufRoundTrip, Version2IsVersion3WithoutTheEndiannessPromise) {
    Writer w;
    w.metadata() = every_value_type();
    std::vector<std::byte> bytes = w.to_bytes();
    bytes[4] = std::byte(2);
    const Contents c = parse(bytes);
    EXPECT_EQ(c.version, 2u);
    EXPECT_EQ(c.metadata, every_value_type());
}

TEST(GgufRoundTrip, Version1HasThirtyTwoBitLengths) {
    const float data[6] = {1, 2, 3, 4, 5, 6};
    RawFile f(/*v1=*/true);
    f.header(1, 1, 3);
    f.put_string("general.architecture").put(uint32_t(ValueType::string)).put_string("llama");
    f.put_string("tokens").put(uint32_t(ValueType::array)).put(uint32_t(ValueType::string));
    f.put_length(2).put_string("a").put_string("bc");
    f.put_string("count").put(uint32_t(ValueType::u64)).put(uint64_t(1) << 40);
    f.put_string("w").put(uint32_t(2)).put(uint32_t(3)).put(uint32_t(2));  // name, n_dims, ne
    f.put(uint32_t(0)).put(uint64_t(0));                                   // F32, offset
    f.pad_to(32);
    const auto *p = reinterpret_cast<const std::byte *>(data);
    f.bytes.insert(f.bytes.end(), p, p + sizeof(data));

    const Contents c = parse(f.bytes);
    EXPECT_EQ(c.version, 1u);
    EXPECT_EQ(c.metadata.get<std::string>("general.architecture"), "llama");
    EXPECT_EQ(c.metadata.get_array<std::string>("tokens"), (std::vector<std::string>{"a", "bc"}));
    EXPECT_EQ(c.metadata.get<uint64_t>("count"), uint64_t(1) << 40);
    ASSERT_EQ(c.tensors.size(), 1u);
    EXPECT_EQ(c.tensors[0].ne[0], 3);
    EXPECT_EQ(c.tensors[0].ne[1], 2);
    EXPECT_EQ(std::memcmp(f.bytes.data() + c.data_offset, data, sizeof(data)), 0);
}

}  // namespace
}  // namespace loom::gguf
