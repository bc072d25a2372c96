// Typed metadata getters: exact types, optional variants, arrays, the integer-width-tolerant
// getters, and the messages for a missing key or a wrong type.
#include "tests/gguf/gguf_test_util.h"

namespace loom::gguf {
namespace {

// The message of the loom::Error that f throws ("" when it throws none).
template <typename F>
std::string error_of(F &&f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

Metadata sample() {
    Metadata m;
    m.set("llama.block_count", int32_t(32));
    m.set("llama.context_length", uint32_t(4096));
    m.set("big", uint64_t(1) << 40);
    m.set("negative", int64_t(-1));
    m.set("general.name", std::string("tiny"));
    m.set("eps", 1e-5f);
    m.set("flag", true);
    m.set("heads", Array{std::vector<int32_t>{8, 8, 4}});
    m.set("heads.u8", Array{std::vector<uint8_t>{2, 250}});
    m.set("heads.negative", Array{std::vector<int64_t>{4, -4}});
    m.set("tokens", Array{std::vector<std::string>{"a", "b"}});
    m.set("swa", Array{std::vector<bool>{true, false}});
    return m;
}

TEST(GgufMetadata, ExactGetters) {
    const Metadata m = sample();
    EXPECT_EQ(m.get<int32_t>("llama.block_count"), 32);
    EXPECT_EQ(m.get<uint32_t>("llama.context_length"), 4096u);
    EXPECT_EQ(m.get<std::string>("general.name"), "tiny");
    EXPECT_FLOAT_EQ(m.get<float>("eps"), 1e-5f);
    EXPECT_TRUE(m.get<bool>("flag"));
    EXPECT_EQ(m.get_array<int32_t>("heads"), (std::vector<int32_t>{8, 8, 4}));
    EXPECT_EQ(m.get_array<std::string>("tokens").size(), 2u);
    EXPECT_EQ(m.get_array<bool>("swa"), (std::vector<bool>{true, false}));
    EXPECT_EQ(m.get<Array>("heads").size(), 3u);
    EXPECT_EQ(m.get<Array>("heads").element_type(), ValueType::i32);
}

TEST(GgufMetadata, MissingAndWrongTypesAreNamed) {
    const Metadata m = sample();
    EXPECT_EQ(error_of([&] { m.get<uint32_t>("llama.block_count"); }),
              "[gguf] key 'llama.block_count' is int32, not uint32");
    EXPECT_EQ(error_of([&] { m.get<uint32_t>("llama.missing"); }),
              "[gguf] key 'llama.missing' is missing");
    EXPECT_EQ(error_of([&] { m.get_array<float>("heads"); }),
              "[gguf] key 'heads' is array of int32, not array of float32");
    EXPECT_EQ(error_of([&] { m.get_array<float>("eps"); }),
              "[gguf] key 'eps' is float32, not array of float32");
    EXPECT_EQ(error_of([&] { m.get<std::string>("tokens"); }),
              "[gguf] key 'tokens' is array of string, not string");
}

TEST(GgufMetadata, FindHasAndOptional) {
    const Metadata m = sample();
    EXPECT_TRUE(m.has("eps"));
    EXPECT_FALSE(m.has("epsilon"));
    ASSERT_NE(m.find("eps"), nullptr);
    EXPECT_EQ(type_of(*m.find("eps")), ValueType::f32);
    EXPECT_EQ(m.find("epsilon"), nullptr);
    EXPECT_EQ(m.get_optional<std::string>("general.name"), "tiny");
    EXPECT_EQ(m.get_optional<std::string>("general.missing"), std::nullopt);
    EXPECT_THROW(m.get_optional<uint32_t>("llama.block_count"), Error) << "wrong type still throws";
}

TEST(GgufMetadata, IntegerGettersAcceptAnyWidthThatFits) {
    const Metadata m = sample();
    EXPECT_EQ(m.get_integer<uint32_t>("llama.block_count"), 32u);
    EXPECT_EQ(m.get_integer<int64_t>("llama.context_length"), 4096);
    EXPECT_EQ(m.get_integer<uint64_t>("big"), uint64_t(1) << 40);
    EXPECT_EQ(m.get_integer_optional<uint32_t>("absent"), std::nullopt);
    EXPECT_EQ(m.get_integer_optional<uint16_t>("llama.block_count"), uint16_t(32));
    EXPECT_EQ(error_of([&] { m.get_integer<uint32_t>("big"); }),
              "[gguf] key 'big': uint64 = 1099511627776 does not fit in uint32");
    EXPECT_EQ(error_of([&] { m.get_integer<uint32_t>("negative"); }),
              "[gguf] key 'negative': int64 = -1 does not fit in uint32");
    EXPECT_EQ(error_of([&] { m.get_integer<int32_t>("eps"); }),
              "[gguf] key 'eps' is float32, not an integer");
    EXPECT_EQ(error_of([&] { m.get_integer<int32_t>("flag"); }),
              "[gguf] key 'flag' is bool, not an integer");

    EXPECT_EQ(m.get_integer_array<uint32_t>("heads"), (std::vector<uint32_t>{8, 8, 4}));
    EXPECT_EQ(m.get_integer_array<int32_t>("heads.u8"), (std::vector<int32_t>{2, 250}));
    EXPECT_EQ(error_of([&] { m.get_integer_array<int8_t>("heads.u8"); }),
              "[gguf] key 'heads.u8': element 1 = 250 does not fit in int8");
    EXPECT_EQ(error_of([&] { m.get_integer_array<uint32_t>("heads.negative"); }),
              "[gguf] key 'heads.negative': element 1 = -4 does not fit in uint32");
    EXPECT_EQ(error_of([&] { m.get_integer_array<uint32_t>("tokens"); }),
              "[gguf] key 'tokens' is array of string, not an array of integers");
    EXPECT_EQ(error_of([&] { m.get_integer_array<uint32_t>("llama.block_count"); }),
              "[gguf] key 'llama.block_count' is int32, not an array of integers");
}

TEST(GgufMetadata, SetReplacesInPlace) {
    Metadata m = sample();
    const size_t n = m.size();
    m.set("eps", 1e-6f);
    EXPECT_EQ(m.size(), n);
    EXPECT_EQ(m.entries()[5].key, "eps");
    EXPECT_FLOAT_EQ(m.get<float>("eps"), 1e-6f);
}

TEST(GgufMetadata, TypeNames) {
    EXPECT_STREQ(value_type_name(ValueType::u8), "uint8");
    EXPECT_STREQ(value_type_name(ValueType::f64), "float64");
    EXPECT_STREQ(value_type_name(ValueType(99)), "unknown");
    EXPECT_EQ(type_name(Value(Array{std::vector<Array>{}})), "array of array");
    EXPECT_EQ(kValueTypeOf<std::string>, ValueType::string);
    EXPECT_EQ(kValueTypeOf<double>, ValueType::f64);
}

TEST(GgufTensorTypes, IdsMapThroughTheTraitsTable) {
    for (int i = 0; i < kDTypeCount; ++i) {
        const DType type = DType(i);
        EXPECT_EQ(dtype_from_gguf_id(traits(type).gguf_id), type) << dtype_name(type);
        EXPECT_STREQ(gguf_type_name(traits(type).gguf_id), dtype_name(type))
            << "Loom's names are GGUF's names";
    }
    EXPECT_STREQ(gguf_type_name(12), "Q4_K");
    EXPECT_STREQ(gguf_type_name(39), "MXFP4");
    EXPECT_EQ(gguf_type_name(40), nullptr);
    EXPECT_EQ(dtype_from_gguf_id(1000), std::nullopt);
}

}  // namespace
}  // namespace loom::gguf
