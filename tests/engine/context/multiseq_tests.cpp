// Three prompts decoded as sequences 0, 1, 2 of one batch against llama.cpp's logits
// (../shared/fixtures/stories260K-multiseq) and against each prompt decoded alone.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/context/context.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::bit_identical;
using test::fixtures_root;
using test::nmse;

struct MultiseqCase {
    std::string model_path;
    std::vector<std::vector<int32_t>> prompts;
    int64_t n_vocab = 0;
    std::vector<float> logits;  // [2][n_seq][n_vocab]: batched, then alone

    std::span<const float> row(int batched_or_alone, size_t seq) const {
        const size_t i = size_t(batched_or_alone) * prompts.size() + seq;
        return {logits.data() + i * size_t(n_vocab), size_t(n_vocab)};
    }
};

MultiseqCase load_multiseq() {
    MultiseqCase c;
    const auto dir = fixtures_root() / "stories260K-multiseq";
    std::ifstream in(dir / "case.json");
    if (!in) {
        ADD_FAILURE() << "missing fixture " << (dir / "case.json");
        return c;
    }
    const auto json = nlohmann::json::parse(in);
    c.model_path = (dir / json["model"].get<std::string>()).lexically_normal().string();
    c.n_vocab = json["n_vocab"].get<int64_t>();
    for (const auto &s : json["sequences"]) {
        c.prompts.push_back(s["tokens"].get<std::vector<int32_t>>());
    }
    c.logits.resize(2 * c.prompts.size() * size_t(c.n_vocab));
    std::ifstream bin(dir / json["logits_file"].get<std::string>(), std::ios::binary);
    bin.read(reinterpret_cast<char *>(c.logits.data()),
             std::streamsize(c.logits.size() * sizeof(float)));
    EXPECT_TRUE(bin.good()) << "short logits file in " << dir;
    return c;
}

ContextOptions exact_options(int n_seq_max) {
    return {.n_ctx = 256,
            .n_threads = 2,
            .flash_attn = false,
            .type_k = DType::F32,
            .type_v = DType::F32,
            .n_seq_max = n_seq_max};
}

std::vector<float> decode_alone(const Model &model, const std::vector<int32_t> &tokens) {
    Context ctx(model, exact_options(1));
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) {
        batch.add(tokens[i], Pos(i), 0, i + 1 == tokens.size());
    }
    ctx.decode(batch);
    const auto row = ctx.logits(0);
    return {row.begin(), row.end()};
}

// Prompt s as sequence s, all in one batch, logits for each prompt's last token.
Batch last_token_logits(const std::vector<std::vector<int32_t>> &prompts) {
    Batch batch;
    for (size_t s = 0; s < prompts.size(); ++s) {
        const auto &p = prompts[s];
        for (size_t i = 0; i < p.size(); ++i) batch.add(p[i], Pos(i), SeqId(s), i + 1 == p.size());
    }
    return batch;
}

TEST(ContextMultiseq, OneBatchMatchesLlamaCppAndEachPromptAlone) {
    const MultiseqCase c = load_multiseq();
    ASSERT_EQ(c.prompts.size(), 3u);
    const auto model = Model::load(c.model_path);
    ASSERT_EQ(model->hparams().n_vocab, c.n_vocab);

    Context ctx(*model, exact_options(3));
    Batch batch;
    for (size_t s = 0; s < c.prompts.size(); ++s) {
        const auto &p = c.prompts[s];
        for (size_t i = 0; i < p.size(); ++i) batch.add(p[i], Pos(i), SeqId(s), i + 1 == p.size());
    }
    ASSERT_LE(batch.size(), ctx.options().n_ctx);
    ctx.decode(batch);
    ASSERT_EQ(ctx.n_outputs(), 3);

    for (size_t s = 0; s < c.prompts.size(); ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        const auto batched = ctx.logits(int64_t(s));
        EXPECT_LT(nmse(batched, c.row(0, s)), 1e-6);
        EXPECT_LT(nmse(batched, c.row(1, s)), 1e-6);
        const std::vector<float> alone = decode_alone(*model, c.prompts[s]);
        EXPECT_LT(nmse(alone, c.row(1, s)), 1e-6);
        EXPECT_LT(nmse(batched, alone), 1e-6);
        // Not bit for bit in general: Loom has one cell array for every sequence (llama.cpp's
        // kv_unified = true, which also differs, by 4.3e-6), so sequence s sits at other cells
        // than alone, and the SIMD lanes that sum softmax(KQ) and softmax(KQ) V over the cells
        // group its terms differently. Sequence 0 holds cells 0..15 either way: identical.
        if (s == 0) {
            EXPECT_TRUE(bit_identical(batched, alone)) << "NMSE " << nmse(batched, alone);
        }
    }
}

// One KV stream per sequence: each sequence holds the same cells whether the others are in the
// batch or not, so batched and alone agree bit for bit.
TEST(ContextMultiseq, StreamsMakeEachSequenceIndependentOfTheBatch) {
    const MultiseqCase c = load_multiseq();
    const auto model = Model::load(c.model_path);
    ContextOptions options = exact_options(3);
    options.kv_unified = false;
    options.n_ctx = 3 * 256;
    Context ctx(*model, options);
    ctx.decode(last_token_logits(c.prompts));
    for (size_t s = 0; s < c.prompts.size(); ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        Context alone(*model, options);
        Batch one;
        const auto &p = c.prompts[s];
        for (size_t i = 0; i < p.size(); ++i) one.add(p[i], Pos(i), SeqId(s), i + 1 == p.size());
        alone.decode(one);
        EXPECT_TRUE(bit_identical(ctx.logits(int64_t(s)), alone.logits(0)))
            << "NMSE " << nmse(ctx.logits(int64_t(s)), alone.logits(0));
        EXPECT_LT(nmse(ctx.logits(int64_t(s)), c.row(1, s)), 1e-6);
    }
}

// seq_cp across streams copies the cells: sequence 1 continuing a prompt copied from sequence 0
// equals sequence 0 continuing it (F32 KV, naive attention), and both equal a fresh decode.
TEST(ContextMultiseq, SeqCpAcrossStreamsCopiesTheCache) {
    const MultiseqCase c = load_multiseq();
    const auto model = Model::load(c.model_path);
    ContextOptions options = exact_options(2);
    options.kv_unified = false;
    options.n_ctx = 2 * 256;
    Context ctx(*model, options);
    const std::vector<int32_t> &prompt = c.prompts[2];
    const size_t head = prompt.size() - 1;
    Batch batch;
    for (size_t i = 0; i < head; ++i) batch.add(prompt[i], Pos(i), 0, false);
    ctx.decode(batch);
    ctx.memory().seq_cp(0, 1, 0, -1);
    EXPECT_EQ(ctx.memory().seq_pos_max(1), Pos(head - 1));
    batch.clear();
    batch.add(prompt[head], Pos(head), 0, true);
    batch.add(prompt[head], Pos(head), 1, true);
    ctx.decode(batch);
    EXPECT_TRUE(bit_identical(ctx.logits(0), ctx.logits(1)))
        << "NMSE " << nmse(ctx.logits(0), ctx.logits(1));
    EXPECT_LT(nmse(ctx.logits(1), c.row(1, 2)), 1e-6);
}

// The same three prompts, interleaved token by token in the batch and cut into small
// ubatches: each sequence still sees only its own cells.
TEST(ContextMultiseq, InterleavedTokensInSmallUbatches) {
    const MultiseqCase c = load_multiseq();
    ASSERT_EQ(c.prompts.size(), 3u);
    const auto model = Model::load(c.model_path);
    ContextOptions o = exact_options(3);
    o.n_ubatch = 5;
    Context ctx(*model, o);
    Batch batch;
    std::vector<int64_t> out_index(3, -1);
    int64_t n_out = 0;
    for (size_t i = 0; i < 35; ++i) {
        for (size_t s = 0; s < 3; ++s) {
            const auto &p = c.prompts[s];
            if (i >= p.size()) continue;
            const bool last = i + 1 == p.size();
            if (last) out_index[s] = n_out++;
            batch.add(p[i], Pos(i), SeqId(s), last);
        }
    }
    ctx.decode(batch);
    for (size_t s = 0; s < 3; ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        EXPECT_LT(nmse(ctx.logits(out_index[s]), c.row(1, s)), 1e-6);
    }
}

// Flash attention (F16 cache, as llama.cpp's flash path reads it): batched against alone.
TEST(ContextMultiseq, FlashAttentionBatchedMatchesAlone) {
    const MultiseqCase c = load_multiseq();
    ASSERT_EQ(c.prompts.size(), 3u);
    const auto model = Model::load(c.model_path);
    ContextOptions o = exact_options(3);
    o.flash_attn = true;
    o.type_k = o.type_v = DType::F16;
    Context ctx(*model, o);
    ctx.decode(last_token_logits(c.prompts));
    for (size_t s = 0; s < c.prompts.size(); ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        o.n_seq_max = 1;
        Context alone(*model, o);
        Batch b;
        for (size_t i = 0; i < c.prompts[s].size(); ++i) {
            b.add(c.prompts[s][i], Pos(i), 0, i + 1 == c.prompts[s].size());
        }
        alone.decode(b);
        EXPECT_LT(nmse(ctx.logits(int64_t(s)), alone.logits(0)), 1e-6);
        // llama.cpp's flash path differs from its exact setting by up to 1.6e-2 in a logit.
        EXPECT_LT(nmse(ctx.logits(int64_t(s)), c.row(1, s)), 1e-4);
    }
}

}  // namespace
}  // namespace loom::engine
