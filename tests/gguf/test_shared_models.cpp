// The real files in ../shared/models open, dump, and hold the facts ../shared/models/MODELS.md
// records for them (architecture, counts, shapes, versions, vocabulary, tensor types).
#include <map>

#include "tests/gguf/gguf_test_util.h"

namespace loom::gguf {
namespace {

using testing::require_shared_file;
using testing::shared_models_dir;

struct ModelFacts {
    const char *file;
    uint32_t version;
    uint64_t size;
    uint32_t n_ctx;
    uint32_t n_vocab;
    uint32_t n_embd;
    uint32_t n_layer;
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t n_ff;
    uint32_t n_rot;
    size_t n_f32;  // tensors by type
    size_t n_f16;
};

constexpr ModelFacts kModels[] = {
    {"stories260K.gguf", 3, 1185376, 2048, 512, 64, 5, 8, 4, 172, 8, 48, 0},
    {"tinyllamas-stories-260k-f32.v1.gguf", 1, 1182656, 512, 512, 64, 5, 8, 4, 172, 8, 48, 0},
    {"llama-2-tiny-random.gguf", 3, 1750560, 4096, 32000, 8, 1, 2, 2, 32, 4, 3, 9},
};

class SharedModel : public ::testing::TestWithParam<ModelFacts> {};

TEST_P(SharedModel, HoldsTheFactsOfModelsMd) {
    const ModelFacts &f = GetParam();
    const auto path = shared_models_dir() / f.file;
    ASSERT_NO_FATAL_FAILURE(require_shared_file(path));
    const File file(path.string());
    const Metadata &m = file.metadata();

    EXPECT_EQ(file.version(), f.version);
    EXPECT_EQ(file.bytes().size(), f.size);
    EXPECT_EQ(file.contents().alignment, 32u);
    EXPECT_EQ(m.get<std::string>("general.architecture"), "llama");
    EXPECT_EQ(m.get<std::string>("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(m.get_array<std::string>("tokenizer.ggml.tokens").size(), f.n_vocab);
    EXPECT_EQ(m.get_array<float>("tokenizer.ggml.scores").size(), f.n_vocab);
    EXPECT_EQ(m.get<uint32_t>("llama.context_length"), f.n_ctx);
    EXPECT_EQ(m.get<uint32_t>("llama.embedding_length"), f.n_embd);
    EXPECT_EQ(m.get<uint32_t>("llama.block_count"), f.n_layer);
    EXPECT_EQ(m.get<uint32_t>("llama.attention.head_count"), f.n_head);
    EXPECT_EQ(m.get<uint32_t>("llama.attention.head_count_kv"), f.n_head_kv);
    EXPECT_EQ(m.get<uint32_t>("llama.feed_forward_length"), f.n_ff);
    EXPECT_EQ(m.get<uint32_t>("llama.rope.dimension_count"), f.n_rot);
    EXPECT_FLOAT_EQ(m.get<float>("llama.attention.layer_norm_rms_epsilon"), 1e-5f);

    std::map<DType, size_t> by_type;
    uint64_t end = 0;
    for (const TensorInfo &t : file.tensors()) {
        ++by_type[t.type];
        end = std::max(end, file.contents().data_offset + t.offset + t.nbytes);
    }
    EXPECT_EQ(by_type[DType::F32], f.n_f32);
    EXPECT_EQ(by_type[DType::F16], f.n_f16);
    EXPECT_EQ(file.tensors().size(), f.n_f32 + f.n_f16);
    EXPECT_EQ(end, f.size) << "the file ends exactly at the last tensor byte";

    // Every layer has its nine tensors, shaped by the hparams (GGUF order: ne[0] innermost).
    const int64_t n_embd = f.n_embd, n_embd_kv = f.n_embd / f.n_head * f.n_head_kv;
    const std::map<std::string, std::pair<int64_t, int64_t>> shapes = {
        {"attn_q", {n_embd, n_embd}},    {"attn_k", {n_embd, n_embd_kv}},
        {"attn_v", {n_embd, n_embd_kv}}, {"attn_output", {n_embd, n_embd}},
        {"ffn_gate", {n_embd, f.n_ff}},  {"ffn_down", {f.n_ff, n_embd}},
        {"ffn_up", {n_embd, f.n_ff}},    {"attn_norm", {n_embd, 1}},
        {"ffn_norm", {n_embd, 1}},
    };
    for (uint32_t il = 0; il < f.n_layer; ++il) {
        for (const auto &[name, ne] : shapes) {
            const std::string full = fmt::format("blk.{}.{}.weight", il, name);
            const TensorInfo *t = file.find_tensor(full);
            ASSERT_NE(t, nullptr) << full;
            EXPECT_EQ(t->ne[0], ne.first) << full;
            EXPECT_EQ(t->ne[1], ne.second) << full;
            EXPECT_EQ(t->type,
                      ne.second == 1 ? DType::F32 : (f.n_f16 > 0 ? DType::F16 : DType::F32))
                << full;
        }
    }
    const TensorInfo *embd = file.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->ne[0], n_embd);
    EXPECT_EQ(embd->ne[1], int64_t(f.n_vocab));
    ASSERT_NE(file.find_tensor("output_norm.weight"), nullptr);

    // and it dumps
    const std::string text = format_text(file.contents());
    EXPECT_NE(text.find(fmt::format("GGUF v{}: {} bytes", f.version, f.size)), std::string::npos);
    EXPECT_NE(text.find("blk.0.ffn_down.weight"), std::string::npos);
    EXPECT_NE(format_json(file.contents()).find("\"name\":\"token_embd.weight\""),
              std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModel, ::testing::ValuesIn(kModels), [](const auto &info) {
    std::string name = info.param.file;
    for (char &ch : name) {
        if (!std::isalnum(uint8_t(ch))) ch = '_';
    }
    return name;
});

TEST(SharedModelDetails, Stories260K) {
    const auto path = shared_models_dir() / "stories260K.gguf";
    ASSERT_NO_FATAL_FAILURE(require_shared_file(path));
    const File file(path.string());
    const Metadata &m = file.metadata();
    EXPECT_FALSE(m.has("general.file_type"));
    EXPECT_FALSE(m.has("tokenizer.ggml.pre"));
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.padding_token_id"), 0xFFFFFFFFu);
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.seperator_token_id"), 0xFFFFFFFFu);
    int64_t n_elements = 0;
    for (const TensorInfo &t : file.tensors()) n_elements += t.nelements();
    EXPECT_EQ(n_elements, 292800);
    // output.weight is a copy of token_embd.weight
    const auto out = file.tensor_data(*file.find_tensor("output.weight"));
    const auto embd = file.tensor_data(*file.find_tensor("token_embd.weight"));
    ASSERT_EQ(out.size(), embd.size());
    EXPECT_EQ(std::memcmp(out.data(), embd.data(), out.size()), 0);
    EXPECT_EQ(m.get_array<std::string>("tokenizer.ggml.tokens")[1], "<s>");
}

TEST(SharedModelDetails, V1FileHasTheSameTensorBytesInAnotherOrder) {
    const auto v1_path = shared_models_dir() / "tinyllamas-stories-260k-f32.v1.gguf";
    const auto v3_path = shared_models_dir() / "stories260K.gguf";
    ASSERT_NO_FATAL_FAILURE(require_shared_file(v1_path));
    ASSERT_NO_FATAL_FAILURE(require_shared_file(v3_path));
    const File v1(v1_path.string()), v3(v3_path.string());
    EXPECT_EQ(v1.metadata().get<std::string>("llama.tensor_data_layout"), "Meta AI original pth");
    bool same_order = true;
    for (size_t i = 0; i < v1.tensors().size(); ++i) {
        const TensorInfo &a = v1.tensors()[i];
        const TensorInfo *b = v3.find_tensor(a.name);
        ASSERT_NE(b, nullptr) << a.name;
        same_order = same_order && v3.tensors()[i].name == a.name;
        const auto da = v1.tensor_data(a), db = v3.tensor_data(*b);
        ASSERT_EQ(da.size(), db.size()) << a.name;
        EXPECT_EQ(std::memcmp(da.data(), db.data(), da.size()), 0) << a.name;
    }
    EXPECT_FALSE(same_order);
}

TEST(SharedModelDetails, LlamaTinyRandomIsMostlyF16) {
    const auto path = shared_models_dir() / "llama-2-tiny-random.gguf";
    ASSERT_NO_FATAL_FAILURE(require_shared_file(path));
    const File file(path.string());
    EXPECT_EQ(file.metadata().get<uint32_t>("general.file_type"), 1u);  // MOSTLY_F16
    for (const TensorInfo &t : file.tensors()) {
        EXPECT_EQ(t.type, t.n_dims == 2 ? DType::F16 : DType::F32) << t.name;
    }
}

struct VocabFacts {
    const char *file;
    uint64_t size;
    const char *arch;
    const char *model;
    const char *pre;
    uint32_t n_vocab;
    uint32_t n_merges;  // 0: no merges key
};

constexpr VocabFacts kVocabs[] = {
    {"ggml-vocab-llama-spm.gguf", 723869, "llama", "llama", "default", 32000, 0},
    {"ggml-vocab-phi-3.gguf", 726019, "phi3", "llama", "default", 32064, 0},
    {"ggml-vocab-bert-bge.gguf", 627549, "bert", "bert", "bert-bge", 30522, 0},
    {"ggml-vocab-gpt-2.gguf", 1766807, "gpt2", "gpt2", "gpt-2", 50257, 50000},
    {"ggml-vocab-deepseek-coder.gguf", 1156067, "llama", "gpt2", "deepseek-coder", 32256, 31757},
    {"ggml-vocab-falcon.gguf", 2287728, "falcon", "gpt2", "falcon", 65024, 64784},
    {"ggml-vocab-starcoder.gguf", 1719346, "starcoder2", "gpt2", "starcoder", 49152, 48872},
};

class SharedVocab : public ::testing::TestWithParam<VocabFacts> {};

TEST_P(SharedVocab, HoldsTheFactsOfModelsMd) {
    const VocabFacts &f = GetParam();
    const auto path = shared_models_dir() / "vocab" / f.file;
    ASSERT_NO_FATAL_FAILURE(require_shared_file(path));
    const File file(path.string());
    const Metadata &m = file.metadata();
    EXPECT_EQ(file.version(), 3u);
    EXPECT_EQ(file.bytes().size(), f.size);
    EXPECT_TRUE(file.tensors().empty());
    EXPECT_GT(file.contents().data_offset, f.size) << "ends before the aligned data offset";
    EXPECT_EQ(m.get<std::string>("general.architecture"), f.arch);
    EXPECT_EQ(m.get<std::string>("tokenizer.ggml.model"), f.model);
    EXPECT_EQ(m.get<std::string>("tokenizer.ggml.pre"), f.pre);
    EXPECT_EQ(m.get_array<std::string>("tokenizer.ggml.tokens").size(), f.n_vocab);
    if (f.n_merges > 0) {
        EXPECT_EQ(m.get_array<std::string>("tokenizer.ggml.merges").size(), f.n_merges);
    } else {
        EXPECT_FALSE(m.has("tokenizer.ggml.merges"));
    }
    const std::string text = format_text(file.contents());
    EXPECT_NE(text.find(fmt::format("{} elements]", f.n_vocab)), std::string::npos);
    EXPECT_NE(text.find("tensors: none"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, SharedVocab, ::testing::ValuesIn(kVocabs), [](const auto &info) {
    std::string name = info.param.file;
    for (char &ch : name) {
        if (!std::isalnum(uint8_t(ch))) ch = '_';
    }
    return name;
});

TEST(SharedVocabDetails, BertSpecialTokensAndHparams) {
    const auto path = shared_models_dir() / "vocab" / "ggml-vocab-bert-bge.gguf";
    ASSERT_NO_FATAL_FAILURE(require_shared_file(path));
    const File file(path.string());
    const Metadata &m = file.metadata();
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.cls_token_id"), 101u);
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.seperator_token_id"), 102u);
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.mask_token_id"), 103u);
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.unknown_token_id"), 100u);
    EXPECT_EQ(m.get<uint32_t>("tokenizer.ggml.padding_token_id"), 0u);
    EXPECT_EQ(m.get<uint32_t>("bert.embedding_length"), 384u);
    EXPECT_EQ(m.get<uint32_t>("bert.block_count"), 12u);
    EXPECT_FALSE(m.get<bool>("bert.attention.causal"));
}

TEST(SharedVocabDetails, Phi3HasAChatTemplate) {
    const auto path = shared_models_dir() / "vocab" / "ggml-vocab-phi-3.gguf";
    ASSERT_NO_FATAL_FAILURE(require_shared_file(path));
    const File file(path.string());
    EXPECT_NE(file.metadata().get<std::string>("tokenizer.chat_template").find("<|user|>"),
              std::string::npos);
}

}  // namespace
}  // namespace loom::gguf
