#include "engine/model/synthetic_llama.h"

#include <fmt/format.h>

#include <vector>

#include "engine/model/synthetic_weights.h"
#include "loom/gguf.h"

namespace loom::engine {
namespace {

void add_vocab(gguf::Writer &w, int64_t n_vocab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(fmt::format("<0x{:02X}>", b));
        types.push_back(6);  // byte
    }
    for (int64_t i = int64_t(tokens.size()); i < n_vocab; ++i) {
        tokens.push_back(fmt::format("\u2581t{}", i));
        types.push_back(1);
    }
    std::vector<float> scores(tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    w.set("tokenizer.ggml.model", std::string("llama"));
    w.set("tokenizer.ggml.tokens", gguf::Array{std::move(tokens)});
    w.set("tokenizer.ggml.scores", gguf::Array{std::move(scores)});
    w.set("tokenizer.ggml.token_type", gguf::Array{std::move(types)});
    w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
    w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
}

}  // namespace

void write_synthetic_llama(const std::string &path, const LlamaShape &s, DType type,
                           uint32_t seed) {
    gguf::Writer w;
    w.set("general.architecture", std::string("llama"));
    w.set("general.name", std::string("synthetic llama"));
    w.set("llama.context_length", uint32_t(s.n_ctx));
    w.set("llama.embedding_length", uint32_t(s.n_embd));
    w.set("llama.block_count", uint32_t(s.n_layer));
    w.set("llama.feed_forward_length", uint32_t(s.n_ff));
    w.set("llama.attention.head_count", uint32_t(s.n_head));
    w.set("llama.attention.head_count_kv", uint32_t(s.n_head_kv));
    w.set("llama.rope.dimension_count", uint32_t(s.n_embd / s.n_head));
    w.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    add_vocab(w, s.n_vocab);

    SyntheticWeights store(seed);
    const int64_t n_kv = s.n_embd / s.n_head * s.n_head_kv;
    constexpr float kStd = 0.02f;
    store.add(w, "token_embd.weight", type, s.n_embd, s.n_vocab, 0.0f, kStd);
    store.add(w, "output_norm.weight", DType::F32, s.n_embd, 1, 1.0f, kStd);
    store.add(w, "output.weight", type, s.n_embd, s.n_vocab, 0.0f, kStd);
    for (int64_t il = 0; il < s.n_layer; ++il) {
        auto name = [il](const char *n) { return fmt::format("blk.{}.{}", il, n); };
        store.add(w, name("attn_norm.weight"), DType::F32, s.n_embd, 1, 1.0f, kStd);
        store.add(w, name("attn_q.weight"), type, s.n_embd, s.n_embd, 0.0f, kStd);
        store.add(w, name("attn_k.weight"), type, s.n_embd, n_kv, 0.0f, kStd);
        store.add(w, name("attn_v.weight"), type, s.n_embd, n_kv, 0.0f, kStd);
        store.add(w, name("attn_output.weight"), type, s.n_embd, s.n_embd, 0.0f, kStd);
        store.add(w, name("ffn_norm.weight"), DType::F32, s.n_embd, 1, 1.0f, kStd);
        store.add(w, name("ffn_gate.weight"), type, s.n_embd, s.n_ff, 0.0f, kStd);
        store.add(w, name("ffn_up.weight"), type, s.n_embd, s.n_ff, 0.0f, kStd);
        store.add(w, name("ffn_down.weight"), type, s.n_ff, s.n_embd, 0.0f, kStd);
    }
    w.write(path);
}

}  // namespace loom::engine
