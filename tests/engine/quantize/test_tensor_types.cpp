// The per-tensor mix rules on a synthetic 8-layer model, against llama.cpp's rules as written in
// src/llama-quant.cpp (the fixtures only have 2 layers, too few to tell the layer patterns apart).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/quantize/tensor_types.h"

namespace loom::engine {
namespace {

gguf::TensorInfo matrix(const std::string &name, int64_t ne0, int64_t ne1) {
    gguf::TensorInfo t;
    t.name = name;
    t.n_dims = ne1 == 1 ? 1 : 2;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    return t;
}

// An 8-layer llama-like file: attn_v and ffn_down per layer, a norm, and an output matrix.
std::vector<gguf::TensorInfo> eight_layers(bool with_output) {
    std::vector<gguf::TensorInfo> tensors{matrix("token_embd.weight", 512, 1000)};
    for (int il = 0; il < 8; ++il) {
        const std::string blk = "blk." + std::to_string(il) + ".";
        tensors.push_back(matrix(blk + "attn_norm.weight", 512, 1));
        tensors.push_back(matrix(blk + "attn_v.weight", 512, 128));
        tensors.push_back(matrix(blk + "attn_output.weight", 512, 512));
        tensors.push_back(matrix(blk + "ffn_down.weight", 1024, 512));
    }
    if (with_output) tensors.push_back(matrix("output.weight", 512, 1000));
    return tensors;
}

// name -> chosen type, for one file type.
std::map<std::string, DType> choose(const std::vector<gguf::TensorInfo> &tensors,
                                    const char *file_type, QuantModelFacts model = {.n_layer = 8},
                                    bool pure = false) {
    const auto ordered = quantize_order(tensors);
    const auto choices = choose_tensor_types(ordered, model, *find_file_type(file_type), pure);
    std::map<std::string, DType> types;
    for (size_t i = 0; i < ordered.size(); ++i) types[ordered[i]->name] = choices[i].type;
    return types;
}

std::string layer(int il, const char *tensor) {
    return "blk." + std::to_string(il) + "." + tensor + ".weight";
}

TEST(QuantizeMix, OrderIsByLayerThenName) {
    std::vector<gguf::TensorInfo> tensors{matrix("output.weight", 32, 2), matrix("blk.10.a", 32, 2),
                                          matrix("blk.2.b", 32, 2), matrix("blk.2.a", 32, 2),
                                          matrix("a.weight", 32, 2)};
    std::vector<std::string> names;
    for (const gguf::TensorInfo *t : quantize_order(tensors)) names.push_back(t->name);
    EXPECT_EQ(names, (std::vector<std::string>{"a.weight", "output.weight", "blk.2.a", "blk.2.b",
                                               "blk.10.a"}));
}

// use_more_bits for 8 layers: i < 1, i >= 7, or (i - 1) % 3 == 2, so layers 0, 3, 6 and 7.
TEST(QuantizeMix, Q4KMRaisesAttnVAndFfnDownOnMoreBitsLayers) {
    const auto types = choose(eight_layers(true), "Q4_K_M");
    for (int il = 0; il < 8; ++il) {
        const bool more = il == 0 || il == 3 || il == 6 || il == 7;
        EXPECT_EQ(types.at(layer(il, "attn_v")), more ? DType::Q6_K : DType::Q4_K) << il;
        EXPECT_EQ(types.at(layer(il, "ffn_down")), more ? DType::Q6_K : DType::Q4_K) << il;
        EXPECT_EQ(types.at(layer(il, "attn_output")), DType::Q4_K) << il;
        EXPECT_EQ(types.at(layer(il, "attn_norm")), DType::F32) << il;
    }
    EXPECT_EQ(types.at("output.weight"), DType::Q6_K);
    EXPECT_EQ(types.at("token_embd.weight"), DType::Q4_K);
}

TEST(QuantizeMix, TiedEmbeddingsGetTheOutputType) {
    EXPECT_EQ(choose(eight_layers(false), "Q4_K_M").at("token_embd.weight"), DType::Q6_K);
    EXPECT_EQ(choose(eight_layers(false), "Q8_0").at("token_embd.weight"), DType::Q8_0);
    EXPECT_EQ(choose(eight_layers(false), "Q4_K_M", {.n_layer = 8}, true).at("token_embd.weight"),
              DType::Q4_K);
}

TEST(QuantizeMix, Q4KSAndQ3KM) {
    const auto s = choose(eight_layers(true), "Q4_K_S");
    for (int il = 0; il < 8; ++il) {
        EXPECT_EQ(s.at(layer(il, "attn_v")), il < 4 ? DType::Q5_K : DType::Q4_K) << il;
        EXPECT_EQ(s.at(layer(il, "ffn_down")), il < 1 ? DType::Q5_K : DType::Q4_K) << il;
    }
    const auto m = choose(eight_layers(true), "Q3_K_M");
    for (int il = 0; il < 8; ++il) {
        EXPECT_EQ(m.at(layer(il, "attn_v")), il < 2 ? DType::Q5_K : DType::Q4_K) << il;
        // n_layer / 16 is 0 here, and Q4_K everywhere else outside Falcon.
        EXPECT_EQ(m.at(layer(il, "ffn_down")), DType::Q4_K) << il;
        EXPECT_EQ(m.at(layer(il, "attn_output")), DType::Q4_K) << il;
    }
}

TEST(QuantizeMix, Q2KDependsOnGqa) {
    const auto gqa1 = choose(eight_layers(true), "Q2_K", {.n_layer = 8, .n_gqa = 1});
    const auto gqa4 = choose(eight_layers(true), "Q2_K", {.n_layer = 8, .n_gqa = 4});
    EXPECT_EQ(gqa1.at(layer(0, "attn_v")), DType::Q3_K);
    EXPECT_EQ(gqa4.at(layer(0, "attn_v")), DType::Q4_K);
    EXPECT_EQ(gqa1.at(layer(5, "ffn_down")), DType::Q3_K);
    EXPECT_EQ(gqa1.at(layer(5, "attn_output")), DType::Q3_K);
}

TEST(QuantizeMix, FallbacksFollowTheRowWidth) {
    std::vector<gguf::TensorInfo> tensors{matrix("blk.0.ffn_down.weight", 96, 4),
                                          matrix("blk.0.ffn_up.weight", 172, 4),
                                          matrix("output.weight", 96, 4)};
    const auto k = choose(tensors, "Q6_K", {.n_layer = 1}, true);
    EXPECT_EQ(k.at("blk.0.ffn_down.weight"), DType::Q8_0);  // 96 fits 32, not 256
    EXPECT_EQ(k.at("blk.0.ffn_up.weight"), DType::F16);     // 172 fits neither
    EXPECT_EQ(choose(tensors, "Q4_K_S", {.n_layer = 1}, true).at("blk.0.ffn_down.weight"),
              DType::Q5_0);
    EXPECT_EQ(choose(tensors, "Q5_K_S", {.n_layer = 1}, true).at("blk.0.ffn_down.weight"),
              DType::Q5_1);
    EXPECT_EQ(choose(tensors, "Q3_K_S", {.n_layer = 1}, true).at("blk.0.ffn_down.weight"),
              DType::Q4_0);
    EXPECT_EQ(choose(tensors, "Q4_0", {.n_layer = 1}, true).at("blk.0.ffn_up.weight"), DType::F16);
    // F16 needs no fallback.
    EXPECT_EQ(choose(tensors, "F16", {.n_layer = 1}).at("blk.0.ffn_up.weight"), DType::F16);
    // The output rule: rows that do not fit the mix's blocks make output.weight Q8_0.
    EXPECT_EQ(choose(tensors, "Q4_K_M", {.n_layer = 1}).at("output.weight"), DType::Q8_0);
}

TEST(QuantizeMix, EightExpertsAndSeventyB) {
    const auto moe = choose(eight_layers(true), "Q4_K_M", {.n_layer = 8, .n_expert = 8});
    EXPECT_EQ(moe.at(layer(1, "attn_v")), DType::Q8_0);
    EXPECT_EQ(moe.at(layer(1, "attn_output")), DType::Q5_K);
    const auto big = choose(eight_layers(true), "Q4_K_S", {.n_layer = 8, .size_70b = true});
    EXPECT_EQ(big.at(layer(6, "attn_v")), DType::Q5_K);  // Q4_K raised for 70B models
}

// IQ4_NL and IQ4_XS: attn_v in Q5_K when 4 or more heads share a KV head, ffn_down in Q5_K in the
// first eighth of the layers (llama.cpp: without an importance matrix), 8-expert models' attn_v
// in Q8_0 and attn_output in Q5_K; IQ4_XS rows that do not fit 256 fall back to IQ4_NL.
TEST(QuantizeMix, Iq4Mixes) {
    for (const char *name : {"IQ4_NL", "IQ4_XS"}) {
        SCOPED_TRACE(name);
        const DType base = *dtype_from_name(name);
        const auto gqa1 = choose(eight_layers(true), name, {.n_layer = 8, .n_gqa = 1});
        const auto gqa4 = choose(eight_layers(true), name, {.n_layer = 8, .n_gqa = 4});
        for (int il = 0; il < 8; ++il) {
            EXPECT_EQ(gqa1.at(layer(il, "attn_v")), base) << il;
            EXPECT_EQ(gqa4.at(layer(il, "attn_v")), DType::Q5_K) << il;
            EXPECT_EQ(gqa1.at(layer(il, "ffn_down")), il < 1 ? DType::Q5_K : base) << il;
            EXPECT_EQ(gqa1.at(layer(il, "attn_output")), base) << il;
        }
        EXPECT_EQ(gqa1.at("output.weight"), DType::Q6_K);
        EXPECT_EQ(gqa1.at("token_embd.weight"), base);
        const auto moe = choose(eight_layers(true), name, {.n_layer = 8, .n_expert = 8});
        EXPECT_EQ(moe.at(layer(1, "attn_v")), DType::Q8_0);
        EXPECT_EQ(moe.at(layer(1, "attn_output")), DType::Q5_K);
        const auto pure = choose(eight_layers(true), name, {.n_layer = 8, .n_gqa = 4}, true);
        EXPECT_EQ(pure.at(layer(0, "attn_v")), base);
        EXPECT_EQ(pure.at("output.weight"), base);
    }
    std::vector<gguf::TensorInfo> tensors{matrix("blk.0.ffn_down.weight", 96, 4),
                                          matrix("blk.0.ffn_up.weight", 172, 4)};
    const auto xs = choose(tensors, "IQ4_XS", {.n_layer = 1}, true);
    EXPECT_EQ(xs.at("blk.0.ffn_down.weight"), DType::IQ4_NL);  // 96 fits 32, not 256
    EXPECT_EQ(xs.at("blk.0.ffn_up.weight"), DType::F16);       // 172 fits neither
    EXPECT_EQ(choose(tensors, "IQ4_NL", {.n_layer = 1}, true).at("blk.0.ffn_up.weight"),
              DType::F16);
}

gguf::TensorInfo stack(const std::string &name, int64_t ne0, int64_t ne1, int64_t ne2) {
    gguf::TensorInfo t = matrix(name, ne0, ne1);
    t.n_dims = 3;
    t.ne[2] = ne2;
    return t;
}

// MXFP4_MOE: the experts' 3-D matrices in MXFP4, every other weight (token_embd and output
// included) in Q8_0; the router and the norms stay as they are. Rows that do not fit 32 make F16.
TEST(QuantizeMix, Mxfp4MoeConvertsOnlyTheExperts) {
    std::vector<gguf::TensorInfo> tensors{matrix("token_embd.weight", 64, 1000),
                                          matrix("output.weight", 64, 1000),
                                          matrix("blk.0.attn_q.weight", 64, 64),
                                          matrix("blk.0.attn_v.weight", 64, 32),
                                          matrix("blk.0.ffn_gate_inp.weight", 64, 4),
                                          matrix("blk.0.attn_norm.weight", 64, 1),
                                          stack("blk.0.ffn_gate_exps.weight", 64, 96, 4),
                                          stack("blk.0.ffn_up_exps.weight", 64, 96, 4),
                                          stack("blk.0.ffn_down_exps.weight", 96, 64, 4),
                                          stack("blk.0.ffn_down_exps_odd.weight", 80, 64, 4),
                                          stack("blk.0.attn_k_b.weight", 64, 32, 4),
                                          matrix("blk.0.ffn_down_shexp.weight", 96, 64)};
    const QuantModelFacts facts{.n_layer = 1, .n_gqa = 2, .n_expert = 4};
    const auto types = choose(tensors, "MXFP4_MOE", facts);
    EXPECT_EQ(types.at("token_embd.weight"), DType::Q8_0);
    EXPECT_EQ(types.at("output.weight"), DType::Q8_0);
    EXPECT_EQ(types.at("blk.0.attn_q.weight"), DType::Q8_0);
    EXPECT_EQ(types.at("blk.0.attn_v.weight"), DType::Q8_0);
    EXPECT_EQ(types.at("blk.0.ffn_gate_inp.weight"), DType::F32);
    EXPECT_EQ(types.at("blk.0.attn_norm.weight"), DType::F32);
    EXPECT_EQ(types.at("blk.0.ffn_gate_exps.weight"), DType::MXFP4);
    EXPECT_EQ(types.at("blk.0.ffn_up_exps.weight"), DType::MXFP4);
    EXPECT_EQ(types.at("blk.0.ffn_down_exps.weight"), DType::MXFP4);
    EXPECT_EQ(types.at("blk.0.ffn_down_exps_odd.weight"), DType::F16);  // 80 does not fit 32
    EXPECT_EQ(types.at("blk.0.attn_k_b.weight"), DType::MXFP4);         // any 3-D weight
    EXPECT_EQ(types.at("blk.0.ffn_down_shexp.weight"), DType::Q8_0);
    // Where llama.cpp matches the experts by role (bailingmoe3), other 3-D weights get Q8_0.
    QuantModelFacts by_role = facts;
    by_role.mxfp4_ffn_only = true;
    const auto roles = choose(tensors, "MXFP4_MOE", by_role);
    EXPECT_EQ(roles.at("blk.0.attn_k_b.weight"), DType::Q8_0);
    EXPECT_EQ(roles.at("blk.0.ffn_up_exps.weight"), DType::MXFP4);
    // --pure: every quantizable weight in MXFP4.
    const auto pure = choose(tensors, "MXFP4_MOE", facts, true);
    EXPECT_EQ(pure.at("blk.0.attn_q.weight"), DType::MXFP4);
    EXPECT_EQ(pure.at("output.weight"), DType::MXFP4);
}

TEST(QuantizeMix, ModelFactsFromMetadata) {
    gguf::Metadata m;
    m.set("general.architecture", std::string("llama"));
    m.set("llama.block_count", uint32_t(80));
    m.set("llama.attention.head_count", uint32_t(64));
    m.set("llama.attention.head_count_kv", uint32_t(8));
    const QuantModelFacts facts = QuantModelFacts::from_gguf(m);
    EXPECT_EQ(facts.n_layer, 80);
    EXPECT_EQ(facts.n_gqa, 8);
    EXPECT_TRUE(facts.size_70b);  // llama.cpp: 80 llama layers with GQA are LLM_TYPE_70B
    m.set("llama.attention.head_count_kv", uint32_t(64));
    EXPECT_FALSE(QuantModelFacts::from_gguf(m).size_70b);  // 65B
    EXPECT_FALSE(facts.mxfp4_ffn_only);
    m.set("general.architecture", std::string("bailingmoe3"));
    EXPECT_TRUE(QuantModelFacts::from_gguf(m).mxfp4_ffn_only);
}

}  // namespace
}  // namespace loom::engine
