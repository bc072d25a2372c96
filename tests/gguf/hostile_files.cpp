#include "tests/gguf/hostile_files.h"

#include <cstring>

#include "loom/gguf.h"
#include "tests/gguf/field_map.h"

namespace loom::gguf::testing {
namespace {

constexpr uint64_t k2e31 = uint64_t(1) << 31, k2e63 = uint64_t(1) << 63, kAllOnes = ~uint64_t(0);

// Messages for a length or count the file cannot hold, and for a file that ends too early.
constexpr const char *kTooLong = "cannot fit|runs past the end|exceeds the limit";
constexpr const char *kTruncated =
    "ends inside|cannot fit|runs? past the end|past the end of the file|too short";

std::vector<std::byte> with_value(std::vector<std::byte> bytes, const Field &f, uint64_t value) {
    std::memcpy(bytes.data() + f.at, &value, size_t(f.size));  // little-endian host
    return bytes;
}

std::vector<std::byte> with_text(std::vector<std::byte> bytes, uint64_t at, std::string_view s) {
    std::memcpy(bytes.data() + at, s.data(), s.size());
    return bytes;
}

std::vector<std::byte> truncated(const std::vector<std::byte> &bytes, uint64_t size) {
    return {bytes.begin(), bytes.begin() + ptrdiff_t(size)};
}

}  // namespace

std::vector<std::byte> valid_base_file() {
    static const float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const uint16_t b[48] = {};
    static const int32_t c[16] = {};
    Writer w;
    w.set("general.architecture", std::string("llama"));
    w.set("general.alignment", uint32_t(32));
    w.set("test.flag", true);
    w.set("test.count", uint32_t(7));
    w.set("test.other", int32_t(-5));  // same length as test.count, to make a duplicate of
    w.set("test.tokens", Array{std::vector<std::string>{"a", "bc", "def"}});
    w.set("test.scores", Array{std::vector<float>{0.5f, 1.5f, 2.5f}});
    w.set("test.nested", Array{std::vector<Array>{Array{std::vector<int32_t>{1, 2}},
                                                  Array{std::vector<int32_t>{3}}}});
    w.add_tensor("tensor.a", DType::F32, {4, 2}, a);  // names of one length, for duplicates
    w.add_tensor("tensor.b", DType::F16, {8, 3, 2}, b);
    w.add_tensor("tensor.c", DType::I32, {2, 2, 2, 2}, c);
    return w.to_bytes();
}

std::vector<HostileFile> hostile_files() {
    const std::vector<std::byte> base = valid_base_file();
    const std::vector<Field> fields = map_fields(base);
    const Contents contents = parse(base);
    const auto &f = [&](const std::string &name) -> const Field & { return field(fields, name); };
    std::vector<HostileFile> out;

    // Truncation at every field boundary, at the data section, and inside each tensor's data.
    std::vector<uint64_t> cuts = {0, 2, contents.data_offset};
    for (const Field &field : fields) cuts.push_back(field.at);
    for (const TensorInfo &t : contents.tensors) {
        cuts.push_back(contents.data_offset + t.offset + t.nbytes / 2);
        cuts.push_back(contents.data_offset + t.offset + t.nbytes - 1);
    }
    for (uint64_t cut : cuts) {
        out.push_back(
            {"truncated at byte " + std::to_string(cut), truncated(base, cut), kTruncated});
    }

    // Every count and length at values the file cannot hold.
    for (const Field &field : fields) {
        if (field.kind != Field::count && field.kind != Field::length) continue;
        for (uint64_t v : {k2e31, k2e63, kAllOnes}) {
            out.push_back(
                {field.name + " = " + std::to_string(v), with_value(base, field, v), kTooLong});
        }
    }
    // ... and at zero, where each field fails in its own way.
    // the first key is then read as a tensor, its value type as n_dims
    out.push_back({"n_kv = 0", with_value(base, f("n_kv"), 0),
                   "tensor 0 'general.architecture' .*n_dims 8 is not in 1..4"});
    out.push_back({"key length 0", with_value(base, f("kv[3].key_length"), 0), "the key is empty"});
    out.push_back({"string length 0", with_value(base, f("kv[0].string_length"), 0),
                   "key 1 .*(runs past the end|cannot fit)"});
    out.push_back({"tensor name length 0", with_value(base, f("tensor[1].name_length"), 0),
                   "tensor 1 at byte [0-9]+: the tensor name is empty"});
    out.push_back({"array length 0", with_value(base, f("kv[6].array_length"), 0),
                   "key 7 .*runs past the end"});

    // Header.
    out.push_back(
        {"bad magic", with_text(base, 0, "GGML"), "header at byte 0: bad magic 47 47 4d 4c"});
    out.push_back({"empty file", {}, "the file is 0 bytes, too short"});
    for (uint32_t v : {0u, 4u, 0x7fffffffu}) {
        out.push_back({"version " + std::to_string(v), with_value(base, f("version"), v),
                       "unsupported version " + std::to_string(v)});
    }
    out.push_back({"big-endian version", with_value(base, f("version"), 0x03000000),
                   "version 50331648 is 3 byte-swapped"});

    // Value types.
    for (uint64_t v : {uint64_t(13), uint64_t(0xffffffff)}) {
        out.push_back(
            {"value type " + std::to_string(v), with_value(base, f("kv[2].type"), v),
             "key 2 'test.flag' at byte [0-9]+: unknown value type " + std::to_string(v)});
        out.push_back({"array element type " + std::to_string(v),
                       with_value(base, f("kv[6].element_type"), v),
                       "key 6 'test.scores' at byte [0-9]+: unknown array element type"});
    }
    out.push_back({"nested element type unknown",
                   with_value(base, f("kv[7].element[1].element_type"), 20),
                   "key 7 'test.nested' element 1 .*unknown array element type 20"});
    out.push_back({"bool 2", with_value(base, f("kv[2].value"), 2), "bool value 2 is neither"});
    // a uint32 read as int32: same size, so parsing goes on to the alignment check
    out.push_back({"alignment as int32", with_value(base, f("kv[1].type"), 5),
                   "key 1 'general.alignment' .*the alignment is int32, not uint32"});
    out.push_back({"alignment as float32", with_value(base, f("kv[1].type"), 6),
                   "the alignment is float32, not uint32"});
    // a uint32 read as uint64 swallows the next key's first bytes
    out.push_back({"count as uint64", with_value(base, f("kv[3].type"), 10), "key 4 "});

    // Alignment values.
    for (uint32_t v : {0u, 3u, 48u, 0x80000001u}) {
        out.push_back({"alignment " + std::to_string(v), with_value(base, f("kv[1].value"), v),
                       "the alignment " + std::to_string(v) + " is not a power of two"});
    }
    out.push_back({"alignment 64 with offsets aligned to 32",
                   with_value(base, f("kv[1].value"), 64),
                   "tensor 1 'tensor.b' at byte [0-9]+: offset 32 is not a multiple of the "
                   "alignment 64"});
    out.push_back({"alignment 2^31", with_value(base, f("kv[1].value"), k2e31),
                   "the data section starts at byte 2147483648"});

    // Duplicates.
    out.push_back({"duplicate key", with_text(base, f("kv[4].key").at, "test.count"),
                   "key 4 'test.count' at byte [0-9]+: duplicate key \\(key 3 at byte [0-9]+"});
    out.push_back({"duplicate tensor", with_text(base, f("tensor[2].name").at, "tensor.a"),
                   "tensor 2 'tensor.a' .*duplicate tensor name \\(tensor 0 at byte [0-9]+"});
    out.push_back({"NUL in a tensor name", with_text(base, f("tensor[0].name").at + 3, {"\0", 1}),
                   "tensor 0 'ten\\\\x00or\\.a' .*contains a NUL byte"});

    // Tensor types.
    out.push_back({"tensor type Q4_2 (removed)", with_value(base, f("tensor[0].type"), 4),
                   "tensor 0 'tensor.a' at byte [0-9]+: tensor type Q4_2 \\(GGUF type id 4\\) is "
                   "not supported by Loom yet"});
    out.push_back(
        {"tensor type 99", with_value(base, f("tensor[1].type"), 99), "unknown tensor type id 99"});
    out.push_back({"tensor type 2^32-1", with_value(base, f("tensor[2].type"), 0xffffffff),
                   "unknown tensor type id 4294967295"});
    if (!dtype_from_gguf_id(12)) {
        out.push_back({"tensor type Q4_K", with_value(base, f("tensor[2].type"), 12),
                       "tensor type Q4_K \\(GGUF type id 12\\) is not supported by Loom yet"});
    }

    // Shapes.
    for (uint64_t v : {uint64_t(0), uint64_t(5), k2e31, uint64_t(0xffffffff)}) {
        out.push_back({"n_dims " + std::to_string(v), with_value(base, f("tensor[0].n_dims"), v),
                       "tensor 0 'tensor.a' at byte [0-9]+: n_dims " + std::to_string(v) +
                           " is not in 1..4"});
    }
    out.push_back(
        {"ne 0", with_value(base, f("tensor[1].ne[1]"), 0), "ne\\[1\\] = 0 is not positive"});
    out.push_back({"ne -1", with_value(base, f("tensor[1].ne[2]"), kAllOnes),
                   "ne\\[2\\] = -1 is not positive"});
    out.push_back({"ne -2^63", with_value(base, f("tensor[1].ne[0]"), k2e63),
                   "ne\\[0\\] = -9223372036854775808 is not positive"});
    {
        auto bytes = with_value(base, f("tensor[0].ne[0]"), uint64_t(1) << 62);
        out.push_back({"element count overflows", with_value(bytes, f("tensor[0].ne[1]"), 2),
                       "tensor 0 .*element count of \\[4611686018427387904, 2, 1, 1\\] overflows"});
        bytes = with_value(base, f("tensor[2].ne[0]"), uint64_t(1) << 20);
        bytes = with_value(bytes, f("tensor[2].ne[1]"), uint64_t(1) << 20);
        bytes = with_value(bytes, f("tensor[2].ne[2]"), uint64_t(1) << 20);
        out.push_back({"element count overflows over four dims",
                       with_value(bytes, f("tensor[2].ne[3]"), uint64_t(1) << 10),
                       "element count .* overflows 64 bits"});
        bytes = with_value(base, f("tensor[0].ne[0]"), uint64_t(1) << 61);
        out.push_back({"byte size overflows", with_value(bytes, f("tensor[0].ne[1]"), 2),
                       "byte size of F32 \\[2305843009213693952, 2, 1, 1\\] overflows 64 bits"});
        bytes = with_value(base, f("tensor[1].ne[0]"), uint64_t(1) << 20);
        out.push_back({"dims too big for the file",
                       with_value(bytes, f("tensor[1].ne[1]"), uint64_t(1) << 20),
                       "tensor 1 .*bytes at offset 32 run past the end of the data section"});
    }

    // Offsets.
    const uint64_t b_offset = contents.tensors[1].offset;
    out.push_back({"misaligned offset", with_value(base, f("tensor[1].offset"), b_offset + 1),
                   "tensor 1 'tensor.b' at byte [0-9]+: offset 33 is not a multiple of the "
                   "alignment 32"});
    out.push_back({"overlapping offset", with_value(base, f("tensor[2].offset"), b_offset),
                   "tensor (1|2) .*overlaps tensor (1|2)"});
    out.push_back(
        {"partly overlapping offset", with_value(base, f("tensor[2].offset"), b_offset + 64),
         "tensor 2 'tensor.c' .*data \\[96, 160\\) overlaps tensor 1 'tensor.b' at \\[32, "
         "128\\)"});
    out.push_back({"offset past the data", with_value(base, f("tensor[0].offset"), 4096),
                   "tensor 0 .*32 bytes at offset 4096 run past the end of the data section"});
    out.push_back({"offset 2^63", with_value(base, f("tensor[0].offset"), k2e63),
                   "run past the end of the data section"});
    out.push_back({"offset wraps around", with_value(base, f("tensor[2].offset"), kAllOnes - 31),
                   "at offset 18446744073709551584 run past the end"});
    return out;
}

}  // namespace loom::gguf::testing
