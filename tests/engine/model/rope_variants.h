#pragma once
// stories260K (llama, RoPE of 8 dims in adjacent pairs, trained weights) rewritten with RoPE
// scaling keys and LongRoPE factor tensors: the shapes of scaling the shared fixtures lack.
// llama.cpp's logits for each variant are in tests/engine/model/rope_scaling/ (README.md there
// says how they were made).
#include <string>
#include <vector>

namespace loom::engine::test {

struct RopeVariant {
    std::string name;  // also the reference's file name: rope_scaling/<name>.f32
    std::string scaling_type;
    float factor = 0.0f;       // rope.scaling.factor (0: not written)
    int64_t n_ctx_orig = 0;    // rope.scaling.original_context_length (0: not written)
    float attn_factor = 0.0f;  // rope.scaling.attn_factor (0: not written)
    std::vector<float> long_factors, short_factors;  // rope_factors_{long,short}.weight
};

// The variants the references cover.
const std::vector<RopeVariant> &rope_variants();

// Writes stories260K with the variant's keys and tensors to `path`.
void write_rope_variant(const RopeVariant &variant, const std::string &stories_path,
                        const std::string &path);

}  // namespace loom::engine::test
