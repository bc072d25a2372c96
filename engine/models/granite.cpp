// IBM Granite (3.x dense): the Llama decoder with four multipliers from the file: the input
// embeddings scaled, the attention scores scaled by attention.scale in place of 1/sqrt(head_dim),
// each attention and feed-forward output scaled before its residual add, and the logits divided.
#include "engine/models/llama.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

void read_granite_hparams(const gguf::Metadata &meta, HParams &hp) {
    auto scale = [&](std::string_view suffix) {
        const std::string key = arch_key(hp, suffix);
        const float v = read_float(meta, key).value_or(0.0f);
        if (!std::isfinite(v)) fail("model", "{} = {} is not a number", key, v);
        return v;
    };
    hp.f_embedding_scale = scale("embedding_scale");
    hp.f_residual_scale = scale("residual_scale");
    hp.f_attention_scale = scale("attention.scale");
    // Granite divides the logits by logit_scale; HParams multiplies them.
    const float logit_scale = scale("logit_scale");
    if (logit_scale == 0.0f) fail("model", "{} is missing or 0", arch_key(hp, "logit_scale"));
    hp.f_logit_scale = 1.0f / logit_scale;
    // rope.scaling.finetuned = false turns rotary positions off in Granite's hybrid variants.
    if (const gguf::Value *v = meta.find(arch_key(hp, "rope.scaling.finetuned"))) {
        const bool *on = std::get_if<bool>(v);
        if (on != nullptr && !*on) {
            fail("model", "{} = false (Granite without rotary positions) is not supported",
                 arch_key(hp, "rope.scaling.finetuned"));
        }
    }
}

void load_granite(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_llama_weights(w, hp, m, {});
}

}  // namespace

extern const ArchDescriptor kArch_granite{.name = "granite",
                                          .rope_mode = RopeMode::normal,
                                          .read_hparams = read_granite_hparams,
                                          .load_weights = load_granite,
                                          .build_graph = build_llama_graph};

}  // namespace loom::engine
