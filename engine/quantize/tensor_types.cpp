#include "engine/quantize/tensor_types.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

#include "loom/error.h"

namespace loom::engine {
namespace {

// llama.cpp's LLAMA_FTYPE values of the mixes that have rules of their own.
enum FtypeId : uint32_t {
    kQ2_K = 10,
    kQ3_K_S = 11,
    kQ3_K_M = 12,
    kQ3_K_L = 13,
    kQ4_K_S = 14,
    kQ4_K_M = 15,
    kQ5_K_M = 17,
    kIQ4_NL = 25,
    kIQ4_XS = 30,
    kMXFP4_MOE = 38,
};

// Architectures llama.cpp's quantizer treats apart. Falcon has its own ffn_down, attn_output
// and output rules (llama-quant.cpp); the others are those whose loaders call a model of this
// many layers LLM_TYPE_70B (src/models/*.cpp), which gets a larger attn_v.
struct ArchQuirks {
    std::string_view name;
    bool falcon_rules;
    int layers_70b;    // 0: never 70B
    bool gqa_for_70b;  // llama: 80 layers are 70B only with GQA (65B without)
    // MXFP4_MOE converts only the FFN's 3-D tensors, not its other 3-D ones (MLA projections).
    bool mxfp4_ffn_only = false;
};
constexpr std::array kArchQuirks{
    ArchQuirks{"falcon", true, 0, false},
    ArchQuirks{"llama", false, 80, true},
    ArchQuirks{"qwen2", false, 80, false},
    ArchQuirks{"deci", false, 80, false},
    ArchQuirks{"olmo", false, 80, false},
    ArchQuirks{"jais2", false, 68, false},
    ArchQuirks{"bailingmoe3", false, 0, false, true},
};

// llama.cpp's tensor categories (tensor_get_category): broad roles found by name.
enum class Category {
    token_embd,
    attn_q,
    attn_v,  // also attn_qkv and attn_kv_b: llama.cpp treats them alike (category_is_attn_v)
    attn_k,
    attn_output,
    ffn_up,
    ffn_gate,
    ffn_down,
    output,
    other,
};

bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}

Category category_of(std::string_view name) {
    if (name == "output.weight") return Category::output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
        return Category::token_embd;
    }
    if (contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight") ||
        contains(name, "attn_v.weight")) {
        return Category::attn_v;
    }
    if (contains(name, "attn_k.weight")) return Category::attn_k;
    if (contains(name, "attn_q.weight")) return Category::attn_q;
    if (contains(name, "attn_output.weight")) return Category::attn_output;
    if (contains(name, "ffn_up")) return Category::ffn_up;
    if (contains(name, "ffn_gate")) return Category::ffn_gate;
    if (contains(name, "ffn_down")) return Category::ffn_down;
    return Category::other;
}

// Dimensions as ggml counts them: trailing 1s do not count.
int effective_dims(const gguf::TensorInfo &t) {
    int n = kMaxDims;
    while (n > 1 && t.ne[n - 1] == 1) --n;
    return n;
}

// Tensors llama.cpp never quantizes, by name (tensor_allows_quantization): small or sensitive
// 2-D weights such as norms, MoE routers, positional tables and convolution kernels.
constexpr std::array kKeptAsIs{
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
};

bool allows_quantization(const gguf::TensorInfo &t) {
    // Only matrices (and 3-D expert stacks) are quantized; 1-D tensors stay as they are.
    if (effective_dims(t) < 2) return false;
    const std::string_view name = t.name;
    if (!name.ends_with("weight")) return false;
    if (name == "position_embd.weight" || name == "token_types.weight") return false;
    return std::ranges::none_of(kKeptAsIs, [&](const char *part) { return contains(name, part); });
}

int block_layer(std::string_view name) {
    int layer = -1;
    if (std::sscanf(std::string(name).c_str(), "blk.%d.", &layer) != 1) return -1;
    return layer;
}

// A type whose blocks fit rows of `ncols` elements (llama.cpp's tensor_type_fallback): each
// 256-wide type (the K types, IQ4_XS) falls back to a 32-wide type of about its size, and when
// even 32 does not divide the rows, to F16.
DType fit_rows(DType type, int64_t ncols) {
    if (ncols % traits(type).block_size == 0) return type;
    DType fallback = type;
    switch (type) {
        case DType::IQ4_XS:
            fallback = DType::IQ4_NL;
            break;
        case DType::Q2_K:
        case DType::Q3_K:
            fallback = DType::Q4_0;
            break;
        case DType::Q4_K:
            fallback = DType::Q5_0;
            break;
        case DType::Q5_K:
            fallback = DType::Q5_1;
            break;
        case DType::Q6_K:
            fallback = DType::Q8_0;
            break;
        default:
            break;  // a 32-wide type: only F16 is left
    }
    if (ncols % traits(fallback).block_size != 0) fallback = DType::F16;
    return fallback;
}

// llama.cpp's rule for raising layers (use_more_bits): the first and last eighth of the layers
// and every third layer in between get more bits.
bool use_more_bits(int i_layer, int n_layer) {
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

// The mix rules of llama_tensor_get_type_impl for the file types Loom offers. The counters
// follow llama.cpp's: each rule family numbers its tensors in processing order.
class MixRules {
  public:
    MixRules(const QuantModelFacts &model, uint32_t ftype,
             std::span<const gguf::TensorInfo *const> ordered)
        : model_(model), ftype_(ftype) {
        for (const gguf::TensorInfo *t : ordered) {
            const Category c = category_of(t->name);
            if (c == Category::attn_v) ++n_attention_wv_;
            if (c == Category::output) tied_embeddings_ = false;
        }
    }

    DType choose(const gguf::TensorInfo &t, DType type) {
        const Category c = category_of(t.name);
        // Models without output.weight reuse token_embd as the output, so it gets the output's
        // type.
        if (c == Category::output || (tied_embeddings_ && c == Category::token_embd)) {
            return output_type(t, type);
        }
        if (ftype_ == kMXFP4_MOE) return mxfp4_moe_type(t, c);
        switch (c) {
            case Category::attn_v:
                return attn_v_type(type);
            case Category::attn_k:
                return model_.n_expert == 8 ? DType::Q8_0 : type;
            case Category::ffn_down:
                return ffn_down_type(t, type);
            case Category::attn_output:
                return attn_output_type(type);
            default:
                // token_embd, attn_q, ffn_gate and ffn_up only change in the IQ1-IQ3 mixes.
                return type;
        }
    }

  private:
    // The output matrix is the most sensitive one: Q6_K unless the mix is Q8_0 already, Q8_0
    // when its rows do not fit the mix's blocks (and always for Falcon).
    DType output_type(const gguf::TensorInfo &t, DType type) const {
        if (ftype_ == kMXFP4_MOE) return DType::Q8_0;
        if (model_.falcon_rules || t.ne[0] % traits(type).block_size != 0) return DType::Q8_0;
        return type == DType::Q8_0 ? type : DType::Q6_K;
    }

    // MXFP4_MOE: the experts' stacked matrices (3-D) in MXFP4, every other weight in Q8_0.
    DType mxfp4_moe_type(const gguf::TensorInfo &t, Category c) const {
        const bool ffn =
            c == Category::ffn_up || c == Category::ffn_gate || c == Category::ffn_down;
        const bool experts = t.ne[2] > 1 && (!model_.mxfp4_ffn_only || ffn);
        return experts ? DType::MXFP4 : DType::Q8_0;
    }

    DType attn_v_type(DType type) {
        const int i = i_attention_wv_++;
        if (ftype_ == kQ2_K) {
            type = model_.n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
        } else if (ftype_ == kQ3_K_M) {
            type = i < 2 ? DType::Q5_K : DType::Q4_K;
        } else if (ftype_ == kQ3_K_L) {
            type = DType::Q5_K;
        } else if ((ftype_ == kIQ4_NL || ftype_ == kIQ4_XS) && model_.n_gqa >= 4) {
            type = DType::Q5_K;
        } else if ((ftype_ == kQ4_K_M || ftype_ == kQ5_K_M) && use_more_bits(i, n_attention_wv_)) {
            type = DType::Q6_K;
        } else if (ftype_ == kQ4_K_S && i < 4) {
            type = DType::Q5_K;
        }
        // A 70B model shares each attn_v among 8 heads, so attn_v is 8x smaller than attn_q
        // and more bits there cost little (llama.cpp's comment).
        if (model_.size_70b && (type == DType::Q3_K || type == DType::Q4_K)) type = DType::Q5_K;
        // For 8-expert models llama.cpp found Q8_0 attn_v worth its ~128 MB.
        if (model_.n_expert == 8) type = DType::Q8_0;
        return type;
    }

    DType ffn_down_type(const gguf::TensorInfo &t, DType type) {
        const int i = layer(i_ffn_down_, t);
        const int n = model_.n_layer;
        ++i_ffn_down_;
        const bool falcon = model_.falcon_rules;
        if (ftype_ == kQ2_K) return DType::Q3_K;
        if (ftype_ == kQ3_K_M) {
            if (i < n / 16) return DType::Q5_K;
            return !falcon || use_more_bits(i, n) ? DType::Q4_K : DType::Q3_K;
        }
        if (ftype_ == kQ3_K_L) return falcon ? DType::Q4_K : DType::Q5_K;
        if (ftype_ == kQ4_K_M) {
            if (falcon) {
                return i < n / 16 ? DType::Q6_K : use_more_bits(i, n) ? DType::Q5_K : DType::Q4_K;
            }
            return use_more_bits(i, n) ? DType::Q6_K : type;
        }
        // (llama.cpp: only without an importance matrix, which Loom never has)
        if (i < n / 8 && (ftype_ == kIQ4_NL || ftype_ == kIQ4_XS)) return DType::Q5_K;
        if (ftype_ == kQ5_K_M && use_more_bits(i, n)) return DType::Q6_K;
        if (ftype_ == kQ4_K_S && !falcon && i < n / 8) return DType::Q5_K;
        return type;
    }

    DType attn_output_type(DType type) const {
        if (model_.falcon_rules) return ftype_ == kQ3_K_L ? DType::Q4_K : type;
        if (model_.n_expert == 8) {
            const bool raise = ftype_ == kQ2_K || ftype_ == kQ3_K_S || ftype_ == kQ3_K_M ||
                               ftype_ == kQ4_K_S || ftype_ == kQ4_K_M || ftype_ == kIQ4_NL ||
                               ftype_ == kIQ4_XS;
            return raise ? DType::Q5_K : type;
        }
        if (ftype_ == kQ2_K) return DType::Q3_K;
        if (ftype_ == kQ3_K_M) return DType::Q4_K;
        if (ftype_ == kQ3_K_L) return DType::Q5_K;
        return type;
    }

    // The layer a per-layer rule applies to: the running count, except in MoE models, whose
    // expert tensors are not one per layer, so llama.cpp reads it from the name.
    int layer(int counter, const gguf::TensorInfo &t) const {
        if (model_.n_expert <= 1) return counter;
        const int i = block_layer(t.name);
        if (i < 0 || i >= model_.n_layer) {
            fail("quantize", "cannot tell the layer of tensor '{}' (the model has {} layers)",
                 t.name, model_.n_layer);
        }
        return i;
    }

    const QuantModelFacts &model_;
    uint32_t ftype_;
    bool tied_embeddings_ = true;
    int n_attention_wv_ = 0;
    int i_attention_wv_ = 0;
    int i_ffn_down_ = 0;
};

// An integer hparam that may be stored per layer (an array): layer 0's value, as llama.cpp's
// n_gqa() reads it.
std::optional<int64_t> first_layer_value(const gguf::Metadata &m, const std::string &key) {
    const gguf::Value *v = m.find(key);
    if (v == nullptr) return std::nullopt;
    if (std::holds_alternative<gguf::Array>(*v)) {
        const std::vector<int64_t> values = m.get_integer_array<int64_t>(key);
        if (values.empty()) return std::nullopt;
        return values.front();
    }
    return m.get_integer<int64_t>(key);
}

}  // namespace

QuantModelFacts QuantModelFacts::from_gguf(const gguf::Metadata &metadata) {
    QuantModelFacts facts;
    const std::string name =
        metadata.get_optional<std::string>("general.architecture").value_or("");
    facts.n_layer = int(metadata.get_integer_optional<int32_t>(name + ".block_count").value_or(0));
    facts.n_expert =
        int(metadata.get_integer_optional<int32_t>(name + ".expert_count").value_or(0));
    const int64_t n_head = first_layer_value(metadata, name + ".attention.head_count").value_or(0);
    // llama.cpp's loader defaults head_count_kv to head_count.
    const int64_t n_head_kv =
        first_layer_value(metadata, name + ".attention.head_count_kv").value_or(n_head);
    facts.n_gqa = n_head_kv == 0 ? 0 : int(n_head / n_head_kv);
    const auto quirks =
        std::ranges::find_if(kArchQuirks, [&](const ArchQuirks &q) { return q.name == name; });
    if (quirks != kArchQuirks.end()) {
        facts.falcon_rules = quirks->falcon_rules;
        facts.mxfp4_ffn_only = quirks->mxfp4_ffn_only;
        facts.size_70b =
            facts.n_layer == quirks->layers_70b && (!quirks->gqa_for_70b || n_head != n_head_kv);
    }
    return facts;
}

std::vector<const gguf::TensorInfo *> quantize_order(std::span<const gguf::TensorInfo> tensors) {
    std::vector<const gguf::TensorInfo *> ordered;
    for (const gguf::TensorInfo &t : tensors) ordered.push_back(&t);
    std::ranges::stable_sort(ordered, [](const gguf::TensorInfo *a, const gguf::TensorInfo *b) {
        const int la = block_layer(a->name), lb = block_layer(b->name);
        if (la != lb) return la < lb;
        return a->name < b->name;
    });
    return ordered;
}

std::vector<TensorTypeChoice> choose_tensor_types(std::span<const gguf::TensorInfo *const> ordered,
                                                  const QuantModelFacts &model,
                                                  const FileType &file_type, bool pure) {
    MixRules rules(model, file_type.id, ordered);
    std::vector<TensorTypeChoice> choices;
    for (const gguf::TensorInfo *t : ordered) {
        if (!allows_quantization(*t)) {
            choices.push_back({.type = t->type, .wanted = t->type, .quantizable = false});
            continue;
        }
        DType type = file_type.base;
        // F32/F16/BF16 fit any row; the mix rules and fallbacks are for block formats only.
        if (!traits(type).is_quantized) {
            choices.push_back({.type = type, .wanted = type, .quantizable = true});
            continue;
        }
        if (!pure) type = rules.choose(*t, type);
        choices.push_back({.type = fit_rows(type, t->ne[0]), .wanted = type, .quantizable = true});
    }
    return choices;
}

}  // namespace loom::engine
