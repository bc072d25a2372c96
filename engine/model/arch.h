#pragma once
// Architecture descriptors: what each model family reads from a GGUF file and how its graph is
// built. One file per architecture in engine/models/, listed once in engine/models/archs.def;
// shared code asks the descriptor and never compares architecture names.
#include <string>
#include <string_view>

#include "engine/model/hparams.h"
#include "engine/model/weight_loader.h"
#include "engine/model/weights.h"

namespace loom::engine {

class GraphContext;

// rope: Q and K rotated by position; learned: a table added to the input; alibi: no position in
// the states at all, a bias -slope · distance on the attention scores (HParams::f_max_alibi_bias).
enum class PositionEncoding { rope, learned, alibi };

struct ArchDescriptor {
    std::string_view name;  // general.architecture
    RopeMode rope_mode = RopeMode::normal;
    // How positions enter: rotary embeddings of Q and K (rope_mode), or learned embeddings
    // added to the input, a table of n_ctx_train rows (K in the cache then holds no rotation,
    // and shifting a sequence's positions leaves it as it is).
    PositionEncoding positions = PositionEncoding::rope;
    // Position values per token: 1, or 4 for multimodal rope (time, height, width and a spare
    // component; a text token has its position in the first three and 0 in the last).
    int n_pos_per_embd = 1;
    // False for an encoder: no LM head, its outputs are the last block's states (embeddings,
    // GraphContext::build_embeddings), and a context of it gives no logits.
    bool lm_head = true;
    // Reads the keys only this architecture has, or reads differently, after the common ones
    // (HParams::from_gguf); null when there are none.
    void (*read_hparams)(const gguf::Metadata &meta, HParams &hp) = nullptr;
    // Binds the weights the architecture uses.
    void (*load_weights)(WeightLoader &w, const HParams &hp, ModelWeights &m) = nullptr;
    // The graph body: from the inputs GraphContext offers to the logits.
    void (*build_graph)(GraphContext &g) = nullptr;
};

// Null when Loom has no such architecture.
const ArchDescriptor *find_arch(std::string_view name);
// "llama, qwen2, ..." for error messages.
std::string supported_archs();

}  // namespace loom::engine
