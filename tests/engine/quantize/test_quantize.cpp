// `loom quantize`'s library against llama-quantize: the fixtures in ../shared/fixtures/llama-q-*
// were made by llama-quantize from llama-q-f32-source, and quantizing that source here must give
// the same files, byte for byte. Also the per-tensor mix rules and fallbacks on stories260K, and
// the error paths.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/quantize/quantize.h"
#include "engine/quantize/tensor_types.h"
#include "loom/error.h"
#include "loom/gguf.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string &name) {
    return std::string(LOOM_SOURCE_DIR) + "/../shared/fixtures/" + name + "/model.gguf";
}
std::string stories260k() {
    return std::string(LOOM_SOURCE_DIR) + "/../shared/models/stories260K.gguf";
}

std::vector<char> read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Quantize : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("loom-quantize-test-" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string out(const std::string &name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

QuantizeOptions options_for(const char *type, bool pure) {
    QuantizeOptions options;
    options.file_type = find_file_type(type);
    options.pure = pure;
    options.n_threads = 3;
    return options;
}

// llama-quantize copies the metadata through C strings (ggml's gguf_set_kv passes each string
// value and string array element as c_str()), which cuts every string at its first NUL byte: the
// fixtures' random vocabulary has a token "\0" that llama-quantize wrote as "". Loom copies the
// strings whole; this applies llama.cpp's cut for the comparison.
gguf::Value cut_at_nul(const gguf::Value &value) {
    auto cut = [](const std::string &s) { return s.substr(0, s.find('\0')); };
    if (const auto *s = std::get_if<std::string>(&value)) return cut(*s);
    if (const auto *a = std::get_if<gguf::Array>(&value)) {
        if (const auto *items = std::get_if<std::vector<std::string>>(&a->items)) {
            std::vector<std::string> cut_items;
            for (const std::string &s : *items) cut_items.push_back(cut(s));
            return gguf::Array{std::move(cut_items)};
        }
    }
    return value;
}

// The bytes llama-quantize would have written for a file Loom wrote: the same, with its strings
// cut at NUL (which can shorten the header; the data section keeps its place when the padding
// absorbs it, as it does for the fixtures).
std::vector<std::byte> with_strings_cut_at_nul(const std::string &path) {
    const gguf::File file(path);
    gguf::Writer writer;
    for (const auto &e : file.metadata().entries()) writer.set(e.key, cut_at_nul(e.value));
    for (const gguf::TensorInfo &t : file.tensors()) {
        writer.add_tensor(t.name, t.type, std::span<const int64_t>(t.ne, size_t(t.n_dims)),
                          file.tensor_data(t).data());
    }
    return writer.to_bytes();
}

// Tensor by tensor (names, types, shapes, data), then the metadata, then the whole file.
void expect_same_file(const std::string &ours, const std::string &theirs) {
    const gguf::File a(ours), b(theirs);
    ASSERT_EQ(a.tensors().size(), b.tensors().size());
    for (size_t i = 0; i < a.tensors().size(); ++i) {
        const gguf::TensorInfo &x = a.tensors()[i];
        const gguf::TensorInfo &y = b.tensors()[i];
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(dtype_name(x.type), std::string(dtype_name(y.type))) << x.name;
        EXPECT_EQ(x.n_dims, y.n_dims) << x.name;
        EXPECT_EQ(x.offset, y.offset) << x.name;
        for (int d = 0; d < kMaxDims; ++d) EXPECT_EQ(x.ne[d], y.ne[d]) << x.name;
        const auto dx = a.tensor_data(x), dy = b.tensor_data(y);
        EXPECT_TRUE(std::ranges::equal(dx, dy)) << x.name << " data differ";
    }
    // The one metadata difference: the vocabulary's "\0" token (see cut_at_nul).
    ASSERT_EQ(a.metadata().size(), b.metadata().size());
    for (size_t i = 0; i < a.metadata().size(); ++i) {
        const auto &x = a.metadata().entries()[i];
        const auto &y = b.metadata().entries()[i];
        EXPECT_EQ(x.key, y.key);
        if (x.key == "tokenizer.ggml.tokens") {
            const auto &tokens =
                std::get<std::vector<std::string>>(std::get<gguf::Array>(x.value).items);
            EXPECT_EQ(tokens.at(353), std::string(1, '\0'));
            EXPECT_EQ(cut_at_nul(x.value), y.value) << x.key;
        } else {
            EXPECT_EQ(x.value, y.value) << x.key;
        }
    }
    EXPECT_EQ(a.contents().data_offset, b.contents().data_offset);
    // The whole file, once the strings are cut as llama.cpp cuts them.
    const std::vector<char> theirs_bytes = read_bytes(theirs);
    const std::vector<std::byte> ours_cut = with_strings_cut_at_nul(ours);
    EXPECT_TRUE(std::ranges::equal(ours_cut, std::as_bytes(std::span(theirs_bytes))))
        << ours << " and " << theirs << " differ beyond the NUL-cut token";
}

struct FixtureCase {
    const char *fixture;
    const char *type;
    bool pure;
};

class QuantizeFixture : public Quantize, public ::testing::WithParamInterface<FixtureCase> {};

TEST_P(QuantizeFixture, MatchesLlamaQuantizeByteForByte) {
    const FixtureCase &c = GetParam();
    const std::string path = out("out.gguf");
    quantize_file(fixture("llama-q-f32-source"), path, options_for(c.type, c.pure));
    expect_same_file(path, fixture(c.fixture));
}

// The fixtures' generator lines: llama-quantize --pure for the single types (F16 and BF16 have
// no mix, so --pure changes nothing there), the default mixes for Q4_K_M and Q5_K_M. "Q4_K" and
// "Q5_K" are llama-quantize's aliases of the _M mixes, so those files say file type 15 and 17.
INSTANTIATE_TEST_SUITE_P(
    Fixtures, QuantizeFixture,
    ::testing::Values(
        FixtureCase{"llama-q-f16", "F16", false}, FixtureCase{"llama-q-bf16", "BF16", false},
        FixtureCase{"llama-q-q4_0", "Q4_0", true}, FixtureCase{"llama-q-q4_1", "Q4_1", true},
        FixtureCase{"llama-q-q5_0", "Q5_0", true}, FixtureCase{"llama-q-q5_1", "Q5_1", true},
        FixtureCase{"llama-q-q8_0", "Q8_0", true}, FixtureCase{"llama-q-q2_k", "Q2_K", true},
        FixtureCase{"llama-q-q3_k", "Q3_K", true}, FixtureCase{"llama-q-q4_k", "Q4_K", true},
        FixtureCase{"llama-q-q5_k", "Q5_K", true}, FixtureCase{"llama-q-q6_k", "Q6_K", true},
        FixtureCase{"llama-q-q4_k_m", "Q4_K_M", false},
        FixtureCase{"llama-q-q5_k_m", "Q5_K_M", false}),
    [](const auto &info) {
        return std::string(info.param.type) + (info.param.pure ? "_pure" : "");
    });

// llama-quantize's own output for the IQ4 and MXFP4 mixes, which have no fixture files:
// tests/engine/quantize/reference/*.manifest list what it wrote (regenerate.sh): the file type,
// where the data section starts, and every tensor's name, type, shape, offset and data hash.
struct ManifestCase {
    const char *fixture;
    const char *type;
    bool pure;
};

uint64_t fnv1a(std::span<const std::byte> bytes) {
    uint64_t h = 1469598103934665603ull;
    for (std::byte b : bytes) h = (h ^ uint64_t(b)) * 1099511628211ull;
    return h;
}

class QuantizeManifest : public Quantize, public ::testing::WithParamInterface<ManifestCase> {};

TEST_P(QuantizeManifest, MatchesLlamaQuantize) {
    const ManifestCase &c = GetParam();
    const std::string path = out("out.gguf");
    quantize_file(fixture(c.fixture), path, options_for(c.type, c.pure));
    const std::string manifest = std::string(LOOM_SOURCE_DIR) +
                                 "/tests/engine/quantize/reference/" + c.fixture + "." + c.type +
                                 (c.pure ? ".pure" : "") + ".manifest";
    std::ifstream in(manifest);
    ASSERT_TRUE(in.good()) << manifest;
    const gguf::File file(path);
    size_t i = 0;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (key == "file_type") {
            uint32_t id;
            words >> id;
            EXPECT_EQ(file.metadata().get<uint32_t>("general.file_type"), id);
        } else if (key == "data_offset") {
            uint64_t offset;
            words >> offset;
            EXPECT_EQ(file.contents().data_offset, offset);
        } else {
            ASSERT_EQ(key, "tensor");
            ASSERT_LT(i, file.tensors().size());
            const gguf::TensorInfo &t = file.tensors()[i++];
            std::string name, type, hash;
            int64_t ne[kMaxDims];
            uint64_t offset;
            words >> name >> type >> ne[0] >> ne[1] >> ne[2] >> ne[3] >> offset >> hash;
            EXPECT_EQ(t.name, name);
            EXPECT_EQ(dtype_from_name(type), t.type) << name << ": llama-quantize wrote " << type;
            for (int d = 0; d < kMaxDims; ++d) EXPECT_EQ(t.ne[d], ne[d]) << name;
            EXPECT_EQ(t.offset, offset) << name;
            EXPECT_EQ(fnv1a(file.tensor_data(t)), std::stoull(hash, nullptr, 16))
                << name << " data differ";
        }
    }
    EXPECT_EQ(i, file.tensors().size());
}

// The cases of regenerate.sh: the dense fixture source (n_embd 256, 4 heads per KV head) in the
// IQ4 mixes and --pure, and the MoE fixtures (n_embd 64: IQ4_XS falls back to IQ4_NL) in
// MXFP4_MOE and IQ4_XS.
INSTANTIATE_TEST_SUITE_P(Mixes, QuantizeManifest,
                         ::testing::Values(ManifestCase{"llama-q-f32-source", "IQ4_NL", false},
                                           ManifestCase{"llama-q-f32-source", "IQ4_XS", false},
                                           ManifestCase{"llama-q-f32-source", "IQ4_XS", true},
                                           ManifestCase{"llama-q-f32-source", "MXFP4_MOE", true},
                                           ManifestCase{"llama-moe", "MXFP4_MOE", false},
                                           ManifestCase{"llama-moe", "IQ4_XS", false},
                                           ManifestCase{"qwen2moe", "MXFP4_MOE", false}),
                         [](const auto &info) {
                             std::string name = std::string(info.param.fixture) + "_" +
                                                info.param.type + (info.param.pure ? "_pure" : "");
                             for (char &ch : name) {
                                 if (ch == '-') ch = '_';
                             }
                             return name;
                         });

TEST_F(Quantize, ThreadCountDoesNotChangeTheBytes) {
    QuantizeOptions one = options_for("Q4_K_M", false);
    one.n_threads = 1;
    quantize_file(fixture("llama-q-f32-source"), out("one.gguf"), one);
    QuantizeOptions many = options_for("Q4_K_M", false);
    many.n_threads = 8;
    quantize_file(fixture("llama-q-f32-source"), out("many.gguf"), many);
    EXPECT_TRUE(read_bytes(out("one.gguf")) == read_bytes(out("many.gguf")));
}

std::map<std::string, std::string> types_of(const std::string &path) {
    std::map<std::string, std::string> types;
    const gguf::File file(path);
    for (const gguf::TensorInfo &t : file.tensors()) types[t.name] = dtype_name(t.type);
    return types;
}

// stories260K: n_embd 64, n_ff 172, 5 layers.
// 64-wide rows do not fit 256-element K blocks: Q4_K falls back to Q5_0 and Q6_K to Q8_0;
// the 172-wide ffn_down rows do not even fit 32, so they become F16 (llama.cpp's fallback).
TEST_F(Quantize, Stories260kQ4KMFallsBackAsLlamaCpp) {
    const std::string path = out("q4_k_m.gguf");
    const QuantizeReport report = quantize_file(stories260k(), path, options_for("Q4_K_M", false));
    const auto types = types_of(path);
    EXPECT_EQ(types.at("token_embd.weight"), "Q5_0");
    EXPECT_EQ(types.at("output.weight"), "Q8_0");  // the output rule: Q8_0 when rows do not fit
    for (int il = 0; il < 5; ++il) {
        const std::string blk = "blk." + std::to_string(il) + ".";
        EXPECT_EQ(types.at(blk + "ffn_down.weight"), "F16") << il;
        EXPECT_EQ(types.at(blk + "ffn_gate.weight"), "Q5_0") << il;
        EXPECT_EQ(types.at(blk + "attn_q.weight"), "Q5_0") << il;
        EXPECT_EQ(types.at(blk + "attn_norm.weight"), "F32") << il;
        // use_more_bits picks layers 2 and 4 of 5 (the last eighth, and every third): Q6_K,
        // which falls back to Q8_0.
        const bool more = il == 2 || il == 4;
        EXPECT_EQ(types.at(blk + "attn_v.weight"), more ? "Q8_0" : "Q5_0") << il;
    }
    const gguf::File file(path);
    EXPECT_EQ(file.metadata().get<uint32_t>("general.file_type"), 15u);
    EXPECT_EQ(file.metadata().get<uint32_t>("general.quantization_version"), 2u);
    EXPECT_LT(report.bytes_out, report.bytes_in);
    int fallbacks = 0;
    for (const QuantizedTensor &t : report.tensors) fallbacks += t.to != t.wanted;
    EXPECT_EQ(fallbacks, 5 * 7 + 1);  // every matrix but output.weight, which chose Q8_0
    const auto model = Model::load(path, {.repack = true, .progress = false});
    EXPECT_NE(model, nullptr);
}

// The fixtures' generated F32 model quantized to each type loads and runs, with logits near the
// source's: within NMSE 1e-3 for Q8_0; for every type finite and below 1, where logits of an
// unrelated model of the same scale would be near 2 (2-bit Q2_K on these random weights: 0.68).
TEST_F(Quantize, EveryTypeRunsNearTheSource) {
    const std::vector<int32_t> tokens = test::load_fixture("llama-q-q8_0").tokens;
    ASSERT_FALSE(tokens.empty());
    const auto logits_of = [&](const std::string &path) {
        const auto model = Model::load(path, {.repack = true, .progress = false});
        Context ctx(*model,
                    {.n_ctx = 256, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
        return test::all_logits(ctx, tokens);
    };
    const std::vector<float> source = logits_of(fixture("llama-q-f32-source"));
    for (const char *type : {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_M", "Q4_K_M",
                             "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "F16", "BF16"}) {
        SCOPED_TRACE(type);
        const std::string path = out(std::string(type) + ".gguf");
        quantize_file(fixture("llama-q-f32-source"), path, options_for(type, false));
        const std::vector<float> got = logits_of(path);
        ASSERT_EQ(got.size(), source.size());
        for (const float x : got) ASSERT_TRUE(std::isfinite(x));
        const double e = test::nmse(got, source);
        EXPECT_LT(e, std::string(type) == "Q8_0" ? 1e-3 : 1.0);
    }
}

// The MoE fixtures in MXFP4_MOE (expert stacks in MXFP4 through mul_mat_id, the rest Q8_0) and
// IQ4_XS run near their F32 source: NMSE 0.015-0.21 measured on these random weights (llama-moe's
// 64-wide rows make IQ4_XS fall back to IQ4_NL everywhere), where an unrelated model gives ~2.
TEST_F(Quantize, MoeFixturesRunNearTheSourceInMxfp4AndIq4) {
    for (const char *name : {"llama-moe", "qwen2moe"}) {
        const std::vector<int32_t> tokens = test::load_fixture(name).tokens;
        ASSERT_FALSE(tokens.empty());
        const auto logits_of = [&](const std::string &path) {
            const auto model = Model::load(path, {.repack = true, .progress = false});
            Context ctx(*model,
                        {.n_ctx = 256, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
            return test::all_logits(ctx, tokens);
        };
        const std::vector<float> source = logits_of(fixture(name));
        for (const char *type : {"MXFP4_MOE", "IQ4_XS"}) {
            SCOPED_TRACE(std::string(name) + " " + type);
            const std::string path = out(std::string(type) + ".gguf");
            quantize_file(fixture(name), path, options_for(type, false));
            const std::vector<float> got = logits_of(path);
            ASSERT_EQ(got.size(), source.size());
            for (const float x : got) ASSERT_TRUE(std::isfinite(x));
            EXPECT_LT(test::nmse(got, source), 0.5);
        }
    }
}

TEST_F(Quantize, PureKeepsTheBaseTypeWhereRowsFit) {
    const std::string path = out("pure.gguf");
    quantize_file(fixture("llama-q-f32-source"), path, options_for("Q4_0", true));
    const gguf::File file(path);
    for (const gguf::TensorInfo &t : file.tensors()) {
        EXPECT_EQ(std::string(dtype_name(t.type)), t.n_dims == 1 ? "F32" : "Q4_0") << t.name;
    }
}

TEST_F(Quantize, MixRulesWithoutPure) {
    // Q4_0 without --pure: output.weight gets Q6_K (llama.cpp's output rule), the rest Q4_0.
    const std::string path = out("q4_0.gguf");
    quantize_file(fixture("llama-q-f32-source"), path, options_for("Q4_0", false));
    const auto types = types_of(path);
    EXPECT_EQ(types.at("output.weight"), "Q6_K");
    EXPECT_EQ(types.at("token_embd.weight"), "Q4_0");
    EXPECT_EQ(types.at("blk.1.ffn_down.weight"), "Q4_0");
}

TEST_F(Quantize, RefusesToRequantize) {
    EXPECT_THROW(quantize_file(fixture("llama-q-q8_0"), out("x.gguf"), options_for("Q4_0", true)),
                 Error);
    EXPECT_FALSE(fs::exists(out("x.gguf")));
    QuantizeOptions allow = options_for("Q4_0", true);
    allow.allow_requantize = true;
    quantize_file(fixture("llama-q-q8_0"), out("x.gguf"), allow);
    EXPECT_EQ(types_of(out("x.gguf")).at("output.weight"), "Q4_0");
}

TEST(QuantizeFileTypes, NamesAndAliases) {
    ASSERT_NE(find_file_type("q4_k_m"), nullptr);
    EXPECT_EQ(find_file_type("Q4_K")->id, 15u);
    EXPECT_EQ(find_file_type("Q5_K")->id, 17u);
    EXPECT_EQ(find_file_type("Q3_K")->id, 12u);
    EXPECT_EQ(find_file_type("BF16")->id, 32u);
    EXPECT_EQ(find_file_type("Q8_0")->id, 7u);
    EXPECT_EQ(find_file_type("IQ2_XS"), nullptr);
    EXPECT_NE(file_type_names().find("Q4_K_M"), std::string::npos);
}

TEST_F(Quantize, ErrorsLeaveNoFile) {
    const QuantizeOptions q8 = options_for("Q8_0", false);
    const std::string missing_input = out("missing.gguf");
    EXPECT_THROW(quantize_file(missing_input, out("a.gguf"), q8), Error);
    EXPECT_FALSE(fs::exists(out("a.gguf")));

    // The output is the input, by the same or another path.
    const std::string copy = out("copy.gguf");
    fs::copy_file(stories260k(), copy);
    EXPECT_THROW(quantize_file(copy, copy, q8), Error);
    EXPECT_THROW(quantize_file(copy, (dir_ / "." / "copy.gguf").string(), q8), Error);
    EXPECT_TRUE(read_bytes(copy) == read_bytes(stories260k()));

    EXPECT_THROW(quantize_file(copy, out("no-such-dir/b.gguf"), q8), Error);
    // Not a GGUF file.
    const std::string junk = out("junk.gguf");
    std::ofstream(junk) << "not a model";
    EXPECT_THROW(quantize_file(junk, out("c.gguf"), q8), Error);
    EXPECT_FALSE(fs::exists(out("c.gguf")));
    for (const auto &entry : fs::directory_iterator(dir_)) {
        EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
            << entry.path();
    }
}

}  // namespace
}  // namespace loom::engine
