// Cohere Command R7B: Command R's parallel blocks (one LayerNorm read by attention and the
// feed-forward, both added to the residual), three sliding-window layers for every
// full-attention one by default, rotary positions on the sliding-window layers only, the output
// tied to the token embeddings and the logits multiplied by logit_scale.
#include "engine/models/cohere.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

constexpr CohereOptions kCohere2{};

// The window, logit_scale and the LayerNorm's epsilon are required, as llama.cpp requires them.
// Only the window's layers have rotary positions, with the model's own frequencies: llama.cpp's
// graph passes them the model's base whatever rope.freq_base_swa says, so that key is not read.
void read_cohere2_hparams(const gguf::Metadata &meta, HParams &hp) {
    for (const char *suffix :
         {"attention.sliding_window", "logit_scale", "attention.layer_norm_epsilon"}) {
        if (!meta.has(arch_key(hp, suffix))) fail("model", "{} is missing", arch_key(hp, suffix));
    }
    read_sliding_window(meta, hp, 0, 4);
    hp.rope_freq_base_swa = hp.rope_freq_base;
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    hp.no_rope_layers.assign(size_t(hp.n_layer), false);
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.no_rope_layers[size_t(il)] = !hp.is_swa(il);
}

void load_cohere2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_cohere_weights(w, hp, m, kCohere2);
}

}  // namespace

extern const ArchDescriptor kArch_cohere2{.name = "cohere2",
                                          .rope_mode = RopeMode::normal,
                                          .read_hparams = read_cohere2_hparams,
                                          .load_weights = load_cohere2,
                                          .build_graph = build_cohere_graph};

}  // namespace loom::engine
