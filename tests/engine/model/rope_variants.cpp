#include "tests/engine/model/rope_variants.h"

#include "loom/gguf.h"

namespace loom::engine::test {

const std::vector<RopeVariant> &rope_variants() {
    // stories260K trained on 2048 positions; the prompt has 27 tokens and llama.cpp's context
    // 256 cells, so an original context of 128 makes LongRoPE take its long factors and 1024
    // its short ones; YaRN with an original context of 8 puts most positions past it.
    static const std::vector<RopeVariant> variants = {
        {.name = "linear", .scaling_type = "linear", .factor = 2.0f},
        {.name = "none-with-factor", .scaling_type = "none", .factor = 4.0f},
        {.name = "yarn-normal", .scaling_type = "yarn", .factor = 4.0f, .n_ctx_orig = 8},
        {.name = "longrope-long",
         .scaling_type = "longrope",
         .n_ctx_orig = 128,
         .attn_factor = 1.25f,
         .long_factors = {1.0f, 1.5f, 3.0f, 6.0f},
         .short_factors = {1.0f, 1.1f, 1.2f, 1.3f}},
        {.name = "longrope-short",
         .scaling_type = "longrope",
         .n_ctx_orig = 1024,
         .attn_factor = 1.25f,
         .long_factors = {1.0f, 1.5f, 3.0f, 6.0f},
         .short_factors = {1.0f, 1.1f, 1.2f, 1.3f}},
    };
    return variants;
}

void write_rope_variant(const RopeVariant &v, const std::string &stories_path,
                        const std::string &path) {
    const gguf::File source(stories_path);
    gguf::Writer w;
    for (const auto &entry : source.metadata().entries()) w.set(entry.key, entry.value);
    w.set("llama.rope.scaling.type", v.scaling_type);
    if (v.factor != 0.0f) w.set("llama.rope.scaling.factor", v.factor);
    if (v.n_ctx_orig != 0) {
        w.set("llama.rope.scaling.original_context_length", uint32_t(v.n_ctx_orig));
    }
    if (v.attn_factor != 0.0f) w.set("llama.rope.scaling.attn_factor", v.attn_factor);
    for (const gguf::TensorInfo &t : source.tensors()) {
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        w.add_tensor(t.name, t.type, ne, source.tensor_data(t).data());
    }
    if (!v.long_factors.empty()) {
        w.add_tensor("rope_factors_long.weight", DType::F32, {int64_t(v.long_factors.size())},
                     v.long_factors.data());
        w.add_tensor("rope_factors_short.weight", DType::F32, {int64_t(v.short_factors.size())},
                     v.short_factors.data());
    }
    w.write(path);
}

}  // namespace loom::engine::test
