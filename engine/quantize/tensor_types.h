#pragma once
// Which type each tensor of a file gets when it is quantized: llama.cpp's per-tensor rules
// (src/llama-quant.cpp, llama_tensor_get_type), so that `loom quantize` writes the same mix of
// types as llama-quantize.
#include <span>
#include <vector>

#include "engine/quantize/file_types.h"
#include "loom/gguf.h"

namespace loom::engine {

// The facts about a model that the mix rules look at (llama.cpp reads them from its hparams).
struct QuantModelFacts {
    int n_layer = 0;            // <arch>.block_count
    int n_gqa = 1;              // head_count / head_count_kv of layer 0; 0 when head_count_kv is 0
    int n_expert = 0;           // <arch>.expert_count
    bool falcon_rules = false;  // llama.cpp gives Falcon its own ffn_down/output rules
    bool size_70b = false;      // llama.cpp's LLM_TYPE_70B, which gets a larger attn_v
    bool mxfp4_ffn_only = false;  // MXFP4_MOE leaves 3-D tensors outside the FFN in Q8_0

    static QuantModelFacts from_gguf(const gguf::Metadata &metadata);
};

struct TensorTypeChoice {
    DType type;        // what the tensor is written as
    DType wanted;      // what the mix asked for; differs from type after a fallback
    bool quantizable;  // a weight the file type applies to; other tensors are copied
    bool fallback() const { return type != wanted; }
};

// llama.cpp's processing order, which is also the order of the tensors in its output file: its
// model loader keeps the tensors in a map ordered by layer number ("blk.N.", -1 for the rest),
// then by name. The per-layer rules count tensors in this order.
std::vector<const gguf::TensorInfo *> quantize_order(std::span<const gguf::TensorInfo> tensors);

// One choice per tensor of `ordered` (in quantize_order). With `pure`, every quantizable tensor
// gets the file type's base type, as with llama-quantize --pure; tensors whose rows do not fit
// a whole number of blocks still fall back to a type that fits.
std::vector<TensorTypeChoice> choose_tensor_types(std::span<const gguf::TensorInfo *const> ordered,
                                                  const QuantModelFacts &model,
                                                  const FileType &file_type, bool pure);

}  // namespace loom::engine
