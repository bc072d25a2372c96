#include "engine/model/hparams.h"

#include <cmath>

#include "loom/error.h"

namespace loom::engine {
namespace {

std::optional<float> get_float(const gguf::Metadata &meta, const std::string &key) {
    const gguf::Value *v = meta.find(key);
    if (v == nullptr) return std::nullopt;
    if (const auto *f = std::get_if<float>(v)) return *f;
    if (const auto *d = std::get_if<double>(v)) return float(*d);
    fail("model", "{} is a {}, expected a float", key, gguf::type_name(*v));
}

// A count that must be positive and fit comfortably in memory sizes.
int64_t positive(const std::string &key, int64_t value, int64_t max = int64_t(1) << 31) {
    if (value <= 0 || value > max)
        fail("model", "{} = {} is out of range (1..{})", key, value, max);
    return value;
}

}  // namespace

std::string arch_key(const HParams &hp, std::string_view suffix) {
    return hp.arch + "." + std::string(suffix);
}

HParams HParams::from_gguf(const gguf::Metadata &meta) {
    HParams hp;
    hp.arch = meta.get<std::string>("general.architecture");
    auto key = [&](std::string_view suffix) { return arch_key(hp, suffix); };
    auto count = [&](std::string_view suffix) {
        const std::string k = key(suffix);
        return positive(k, meta.get_integer<int64_t>(k));
    };
    auto count_or = [&](std::string_view suffix, int64_t fallback) {
        const std::string k = key(suffix);
        return positive(k, meta.get_integer_optional<int64_t>(k).value_or(fallback));
    };

    hp.n_ctx_train = count("context_length");
    hp.n_embd = count("embedding_length");
    hp.n_layer = count("block_count");
    hp.n_ff = count("feed_forward_length");
    hp.n_head = count("attention.head_count");
    hp.n_head_kv = count_or("attention.head_count_kv", hp.n_head);
    if (hp.n_head % hp.n_head_kv != 0) {
        fail("model", "{} = {} is not a multiple of {} = {}", key("attention.head_count"),
             hp.n_head, key("attention.head_count_kv"), hp.n_head_kv);
    }
    const bool head_from_embd = hp.n_embd % hp.n_head == 0;
    const int64_t default_head = head_from_embd ? hp.n_embd / hp.n_head : 0;
    const std::string k_len = key("attention.key_length"), v_len = key("attention.value_length");
    if (!head_from_embd && (!meta.has(k_len) || !meta.has(v_len))) {
        fail("model", "{} = {} is not a multiple of {} = {}, and {} is missing",
             key("embedding_length"), hp.n_embd, key("attention.head_count"), hp.n_head, k_len);
    }
    hp.n_embd_head_k = count_or("attention.key_length", default_head);
    hp.n_embd_head_v = count_or("attention.value_length", default_head);
    hp.n_rot = count_or("rope.dimension_count", hp.n_embd_head_k);
    if (hp.n_rot > hp.n_embd_head_k) {
        fail("model", "{} = {} exceeds the head size {}", key("rope.dimension_count"), hp.n_rot,
             hp.n_embd_head_k);
    }
    hp.norm_rms_eps = get_float(meta, key("attention.layer_norm_rms_epsilon")).value_or(0.0f);
    hp.norm_eps = get_float(meta, key("attention.layer_norm_epsilon")).value_or(0.0f);
    hp.rope_freq_base = get_float(meta, key("rope.freq_base")).value_or(10000.0f);
    if (const auto factor = get_float(meta, key("rope.scaling.factor")); factor && *factor > 0) {
        hp.rope_freq_scale = 1.0f / *factor;
    }
    hp.n_ctx_orig = meta.get_integer_optional<int64_t>(key("rope.scaling.original_context_length"))
                        .value_or(hp.n_ctx_train);
    hp.f_logit_scale = get_float(meta, key("logit_scale")).value_or(0.0f);
    if (!std::isfinite(hp.rope_freq_base) || hp.rope_freq_base <= 0.0f) {
        fail("model", "{} = {} is not a positive number", key("rope.freq_base"), hp.rope_freq_base);
    }
    return hp;
}

}  // namespace loom::engine
