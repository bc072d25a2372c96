#include "engine/model/hparams.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <variant>

#include "loom/error.h"

namespace loom::engine {
namespace {

// A count that must be positive and fit comfortably in memory sizes.
int64_t positive(const std::string &key, int64_t value, int64_t max = int64_t(1) << 31) {
    if (value <= 0 || value > max)
        fail("model", "{} = {} is out of range (1..{})", key, value, max);
    return value;
}

// DeepSeek's multi-head latent attention keys (all optional).
void read_latent_attention(const gguf::Metadata &meta, HParams &hp) {
    auto optional = [&](std::string_view suffix) {
        const std::string k = arch_key(hp, suffix);
        const auto v = meta.get_integer_optional<int64_t>(k);
        if (v && (*v < 0 || *v > (int64_t(1) << 20)))
            fail("model", "{} = {} is out of range", k, *v);
        return v;
    };
    hp.n_lora_q = optional("attention.q_lora_rank").value_or(0);
    hp.n_lora_kv = optional("attention.kv_lora_rank").value_or(0);
    const auto k_mla = optional("attention.key_length_mla");
    const auto v_mla = optional("attention.value_length_mla");
    hp.is_mla = k_mla.value_or(0) > 0 && v_mla.value_or(0) > 0;
    hp.n_embd_head_k_mla = k_mla.value_or(hp.n_embd_head_k);
    hp.n_embd_head_v_mla = v_mla.value_or(hp.n_embd_head_v);
    if (hp.n_lora_kv > 0 && hp.n_embd_head_k_mla <= hp.n_rot) {
        fail("model", "the key head ({}) must be longer than its rotary part ({})",
             hp.n_embd_head_k_mla, hp.n_rot);
    }
    if (hp.is_mla && (hp.n_embd_head_k != hp.n_lora_kv + hp.n_rot ||
                      hp.n_embd_head_v != hp.n_lora_kv || hp.n_head_kv != 1)) {
        fail("model",
             "latent attention needs key_length = kv_lora_rank + rope dims ({} + {}), "
             "value_length = kv_lora_rank and one KV head; the file has {}, {} and {}",
             hp.n_lora_kv, hp.n_rot, hp.n_embd_head_k, hp.n_embd_head_v, hp.n_head_kv);
    }
}

// The mixture-of-experts keys, checked against each other.
void read_experts(const gguf::Metadata &meta, HParams &hp) {
    auto key = [&](std::string_view suffix) { return arch_key(hp, suffix); };
    auto integer = [&](std::string_view suffix, int64_t fallback) {
        const int64_t v = meta.get_integer_optional<int64_t>(key(suffix)).value_or(fallback);
        if (v < 0 || v > (int64_t(1) << 31))
            fail("model", "{} = {} is out of range", key(suffix), v);
        return v;
    };
    hp.n_expert = integer("expert_count", 0);
    if (hp.n_expert == 0) return;
    hp.n_expert_used = integer("expert_used_count", 0);
    if (hp.n_expert_used < 1 || hp.n_expert_used > hp.n_expert) {
        fail("model", "{} = {} must be in 1..{} ({})", key("expert_used_count"), hp.n_expert_used,
             hp.n_expert, key("expert_count"));
    }
    hp.n_ff_exp = integer("expert_feed_forward_length", hp.n_ff);
    hp.n_ff_shexp = integer("expert_shared_feed_forward_length", hp.n_ff_exp);
    hp.n_expert_shared = integer("expert_shared_count", 0);
    hp.n_layer_dense_lead = integer("leading_dense_block_count", 0);
    hp.n_expert_groups = integer("expert_group_count", 0);
    hp.n_group_used = integer("expert_group_used_count", 0);
    if (hp.n_expert_groups > 1 &&
        (hp.n_expert % hp.n_expert_groups != 0 || hp.n_group_used < 1 ||
         hp.n_group_used >= hp.n_expert_groups ||
         hp.n_expert_used > hp.n_group_used * (hp.n_expert / hp.n_expert_groups))) {
        fail("model", "{} = {} groups with {} = {} cannot hold {} of {} experts",
             key("expert_group_count"), hp.n_expert_groups, key("expert_group_used_count"),
             hp.n_group_used, hp.n_expert_used, hp.n_expert);
    }
    hp.expert_weights_scale = read_float(meta, key("expert_weights_scale")).value_or(0.0f);
    hp.expert_weights_norm = read_bool(meta, key("expert_weights_norm")).value_or(false);
    hp.expert_gating_func = int(integer("expert_gating_func", 0));
}

// The names of RopeScaling, as rope.scaling.type spells them.
constexpr std::pair<std::string_view, RopeScaling> kRopeScalingNames[] = {
    {"none", RopeScaling::none},
    {"linear", RopeScaling::linear},
    {"yarn", RopeScaling::yarn},
    {"longrope", RopeScaling::longrope},
};

// rope.scaling.*: the type ("linear" when absent, as in llama.cpp), the factor (its old key
// rope.scale_linear as a fallback; 0 or absent: none), the original context and the magnitude.
void read_rope_scaling(const gguf::Metadata &meta, HParams &hp) {
    auto key = [&](std::string_view suffix) { return arch_key(hp, suffix); };
    if (meta.has(key("rope.scaling.type"))) {
        const std::string &type = meta.get<std::string>(key("rope.scaling.type"));
        const auto *named = std::find_if(std::begin(kRopeScalingNames), std::end(kRopeScalingNames),
                                         [&](const auto &n) { return n.first == type; });
        if (named == std::end(kRopeScalingNames)) {
            fail("model", "{} = '{}' is not a RoPE scaling type (none, linear, yarn, longrope)",
                 key("rope.scaling.type"), type);
        }
        hp.rope_scaling = named->second;
    }
    const std::string factor_key = meta.has(key("rope.scaling.factor")) ? key("rope.scaling.factor")
                                                                        : key("rope.scale_linear");
    const float factor = read_float(meta, factor_key).value_or(0.0f);
    if (!std::isfinite(factor) || factor < 0.0f) {
        fail("model", "{} = {} is not a scaling factor (a positive number, or 0 for none)",
             factor_key, factor);
    }
    // Scaling type none never scales, whatever the factor says.
    hp.rope_freq_scale =
        factor == 0.0f || hp.rope_scaling == RopeScaling::none ? 1.0f : 1.0f / factor;
    const std::string attn_key = key("rope.scaling.attn_factor");
    hp.rope_attn_factor = read_float(meta, attn_key).value_or(1.0f);
    if (!std::isfinite(hp.rope_attn_factor) || hp.rope_attn_factor <= 0.0f) {
        fail("model", "{} = {} is not a positive number", attn_key, hp.rope_attn_factor);
    }
    hp.n_ctx_orig =
        positive(key("rope.scaling.original_context_length"),
                 meta.get_integer_optional<int64_t>(key("rope.scaling.original_context_length"))
                     .value_or(hp.n_ctx_train));
}

}  // namespace

std::optional<float> read_float(const gguf::Metadata &meta, const std::string &key) {
    const gguf::Value *v = meta.find(key);
    if (v == nullptr) return std::nullopt;
    if (const auto *f = std::get_if<float>(v)) return *f;
    if (const auto *d = std::get_if<double>(v)) return float(*d);
    fail("model", "{} is a {}, expected a float", key, gguf::type_name(*v));
}

std::optional<bool> read_bool(const gguf::Metadata &meta, const std::string &key) {
    const gguf::Value *v = meta.find(key);
    if (v == nullptr) return std::nullopt;
    if (const auto *b = std::get_if<bool>(v)) return *b;
    fail("model", "{} is a {}, expected a bool", key, gguf::type_name(*v));
}

// Only YaRN files name their original context (linear ones give the stretched length as
// context_length, with no original to stretch).
int64_t HParams::n_ctx_max() const {
    if (rope_scaling != RopeScaling::yarn) return n_ctx_train;
    return std::max(n_ctx_train, int64_t(double(n_ctx_orig) / double(rope_freq_scale)));
}

void read_sliding_window(const gguf::Metadata &meta, HParams &hp, int64_t default_window,
                         int64_t default_pattern) {
    const std::string window_key = arch_key(hp, "attention.sliding_window");
    const auto window = meta.get_integer_optional<int64_t>(window_key).value_or(default_window);
    if (window < 0 || window > (int64_t(1) << 31)) {
        fail("model", "{} = {} is out of range", window_key, window);
    }
    hp.swa = {.type = window > 0 ? WindowType::standard : WindowType::none, .n_swa = window};
    hp.swa_layers.assign(size_t(hp.n_layer), false);
    if (window == 0) return;
    const std::string pattern_key = arch_key(hp, "attention.sliding_window_pattern");
    const gguf::Value *v = meta.find(pattern_key);
    if (v != nullptr && std::holds_alternative<gguf::Array>(*v)) {
        const auto &items = std::get<gguf::Array>(*v).items;
        std::vector<int64_t> per_layer;
        if (const auto *bools = std::get_if<std::vector<bool>>(&items)) {
            per_layer.assign(bools->begin(), bools->end());
        } else {
            per_layer = meta.get_integer_array<int64_t>(pattern_key);
        }
        if (int64_t(per_layer.size()) != hp.n_layer) {
            fail("model", "{} has {} entries for {} layers", pattern_key, per_layer.size(),
                 hp.n_layer);
        }
        for (size_t il = 0; il < per_layer.size(); ++il) hp.swa_layers[il] = per_layer[il] != 0;
        return;
    }
    const int64_t n = meta.get_integer_optional<int64_t>(pattern_key).value_or(default_pattern);
    if (n < 0 || n > hp.n_layer + 1) fail("model", "{} = {} is out of range", pattern_key, n);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        hp.swa_layers[size_t(il)] = n == 0 || il % n < n - 1;
    }
}

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
    hp.norm_rms_eps = read_float(meta, key("attention.layer_norm_rms_epsilon")).value_or(0.0f);
    hp.norm_eps = read_float(meta, key("attention.layer_norm_epsilon")).value_or(0.0f);
    hp.causal_attn = read_bool(meta, key("attention.causal")).value_or(true);
    const int64_t pooling =
        meta.get_integer_optional<int64_t>(key("pooling_type")).value_or(int64_t(Pooling::none));
    if (pooling < 0 || pooling > int64_t(Pooling::rank)) {
        fail("model", "{} = {} is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)",
             key("pooling_type"), pooling);
    }
    hp.pooling = Pooling(pooling);
    if (const auto *labels = meta.find(key("classifier.output_labels"))) {
        const auto *array = std::get_if<gguf::Array>(labels);
        if (array == nullptr || array->size() == 0) {
            fail("model", "{} is not a list of labels", key("classifier.output_labels"));
        }
        hp.n_cls_out = int64_t(array->size());
    }
    hp.rope_freq_base = read_float(meta, key("rope.freq_base")).value_or(10000.0f);
    read_rope_scaling(meta, hp);
    hp.f_logit_scale = read_float(meta, key("logit_scale")).value_or(0.0f);
    if (!std::isfinite(hp.rope_freq_base) || hp.rope_freq_base <= 0.0f) {
        fail("model", "{} = {} is not a positive number", key("rope.freq_base"), hp.rope_freq_base);
    }
    read_latent_attention(meta, hp);
    read_experts(meta, hp);
    return hp;
}

}  // namespace loom::engine
