// Gemma 3 (text): Gemma 2's body without the score cap, with RMS norms over each head of Q and K,
// five sliding-window layers (window 4096, rotary base 10000) for every full-attention one by
// default, and the logits capped only where the file says.
#include "engine/models/gemma.h"

namespace loom::engine {
namespace {

constexpr GemmaOptions kGemma3{.qk_norm = true, .tied_output = false, .n_layer_27b = 62};

// The window's layers rotate with rope.freq_base_swa (default 10000) and no scaling; a file
// without attention.sliding_window has none.
void read_gemma3_hparams(const gguf::Metadata &meta, HParams &hp) {
    if (meta.has(arch_key(hp, "attention.sliding_window"))) {
        read_sliding_window(meta, hp, 0, 6);
        hp.rope_freq_base_swa =
            read_float(meta, arch_key(hp, "rope.freq_base_swa")).value_or(10000.0f);
    }
    hp.f_final_logit_softcap =
        read_float(meta, arch_key(hp, "final_logit_softcapping")).value_or(0.0f);
}

void load_gemma3(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_gemma_weights(w, hp, m, kGemma3);
}

void build_gemma3(GraphContext &g) {
    build_gemma_graph(g, kGemma3);
}

}  // namespace

extern const ArchDescriptor kArch_gemma3{.name = "gemma3",
                                         .rope_mode = RopeMode::neox,
                                         .read_hparams = read_gemma3_hparams,
                                         .load_weights = load_gemma3,
                                         .build_graph = build_gemma3};

}  // namespace loom::engine
