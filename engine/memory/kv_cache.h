#pragma once
// A KV cache: per layer it holds, K and V of every cached token, in cells that remember their
// position and their sequences (engine/memory/kv_cells.h). The cells form n_stream streams of
// equal size (one per sequence when sequences must not share cells, else one).
//
//   K of layer l: [n_embd_k_gqa, cells per stream, n_stream], one row per cell.
//   V of layer l: the same, or transposed [cells per stream, n_embd_v_gqa, n_stream] (v_trans),
//   which lets the naive attention multiply V by the softmax without a copy.
//
// A ubatch gets a slot (a cell per token), its K and V are written into those cells by set_rows
// nodes of the graph, and the mask lets token t see cell c of its stream when c holds a sequence
// of t at a position <= t's that the cache's window does not hide. A cache with a window reuses
// the cells every sequence's window has left. Cells are numbered across streams: cell c of
// stream s is s * per + c.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/memory/kv_cells.h"
#include "engine/memory/memory.h"
#include "engine/memory/state_io.h"
#include "engine/model/hparams.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/error.h"

namespace loom::engine {

struct KvCacheParams {
    int64_t size = 0;  // cells
    DType type_k = DType::F16;
    DType type_v = DType::F16;
    bool v_trans = true;  // store V transposed (the naive attention path wants it)
    // No V: attention reads V as the first n_embd_head_v values of each K head (latent
    // attention, where K = [latent | rotary part] and V = latent).
    bool k_only = false;
    // Streams: the cells split into n_stream equal regions, sequence s in region s % n_stream.
    // A sequence then lands in the same cells whatever the other sequences do, so its results
    // do not depend on them; seq_cp between streams copies K and V. 1: one region for all.
    int n_stream = 1;
    int n_seq_max = 1;  // sequence ids are 0 .. n_seq_max - 1
    // The model layers whose K and V it holds (empty: every layer).
    std::vector<int64_t> layers;
    // No K and V at all, only the cells (which sequence holds which positions): an encoder's
    // tokens attend among their own ubatch, so nothing is stored for later.
    bool cells_only = false;
    // What a token may see besides causality; a window lets cells be reused.
    AttnWindow window;
    // ALiBi: the mask holds -|p1 - p0| where a token sees a cell, which the softmax scales by
    // each head's slope (HParams::f_max_alibi_bias), rather than 0.
    bool alibi = false;
    // Per model layer, the memory its K and V live in: the memory of the backend that runs the
    // layer (Model::layer_buffer_type). Null, or shorter than the layer count: host memory.
    std::vector<BufferType *> buffer_types;
};

class KvCache : public Memory {
  public:
    KvCache(const HParams &hp, const KvCacheParams &params);

    // Memory: a cache on its own is a memory of one cache.
    int n_caches() const override { return 1; }
    const KvCache &cache(int) const override { return *this; }
    KvCache &cache(int) override { return *this; }
    int cache_of_layer(int64_t) const override { return 0; }
    std::vector<UbatchMemory> plan(std::span<const Ubatch> ubatches) const override;
    void apply(const Ubatch &u, const UbatchMemory &m) override { apply(u, m.slots.at(0)); }
    void clear() override;
    void seq_rm(SeqId seq, Pos p0, Pos p1) override;
    void seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) override;
    void seq_keep(SeqId seq) override;
    void seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) override;
    void seq_div(SeqId seq, Pos p0, Pos p1, int d) override;
    Pos seq_pos_max(SeqId seq) const override { return cells_.seq_pos_max(seq); }
    Pos seq_pos_min(SeqId seq) const override { return cells_.seq_pos_min(seq); }
    bool seq_can_resume(SeqId seq, Pos p) const override;
    int64_t size() const override { return cells_.size(); }
    int64_t used() const override { return cells_.used(); }
    size_t memory_bytes() const override;

    // The slots of ubatches on cells (a copy of this cache's, or its own), each applied to them
    // after it is found.
    std::vector<KvSlot> plan_on(KvCells &cells, std::span<const Ubatch> ubatches) const;
    void apply(const Ubatch &u, const KvSlot &slot) { cells_.apply(u, slot.cells); }
    const KvCells &cells() const { return cells_; }

    int n_stream() const { return params_.n_stream; }
    int64_t cells_per_stream() const { return cells_.per_stream(); }
    bool v_trans() const { return params_.v_trans && !params_.k_only; }
    bool k_only() const { return params_.k_only; }
    DType type_k() const { return params_.type_k; }
    DType type_v() const { return params_.type_v; }
    // The bytes one cell takes: its K and V rows in every layer held.
    size_t cell_bytes() const;
    const AttnWindow &window() const { return params_.window; }
    // A quantized K or V is stored rotated, as llama.cpp stores it: each run of this many values
    // of a head times the Walsh-Hadamard matrix (core hadamard), 0 when not rotated. The rotation
    // spreads an outlier over its block before the block is rounded; it is orthonormal and its
    // own inverse, so queries rotated alike give the same scores and the attention's output is
    // rotated back. K: quantized with heads a multiple of 64 (runs of the largest power of two
    // dividing the head); V likewise, runs of 64; neither for a K-only cache.
    int64_t k_rotation() const { return k_rotation_; }
    int64_t v_rotation() const { return v_rotation_; }
    const std::vector<int64_t> &layers() const { return layers_; }
    bool holds_layer(int64_t il) const {
        return il >= 0 && size_t(il) < index_.size() && index_[size_t(il)] >= 0;
    }
    // Attention covers the used cells of a ubatch's streams rounded up to kWindowPad, so that
    // graphs of consecutive steps have the same shape. Its cost grows with the cells covered,
    // masked or not (the naive path computes every score), while a graph rebuild costs ~0.5 ms
    // once per kWindowPad generated tokens: 32 keeps both small. Results do not depend on it:
    // masked cells weigh exactly 0.
    static constexpr int64_t kWindowPad = 32;

    // Sequence seq's cells (positions) and their K and V rows, every layer, V as one row per
    // cell whether stored transposed or not. Pending shifts must be applied first.
    void write_seq(SeqId seq, StateWriter &out) const;
    // What write_seq wrote, read and checked without changing anything: loom::Error("[state]
    // ...") for bytes of another cache shape or KV type, or truncated ones.
    struct SavedCells {
        std::vector<Pos> positions;   // ascending
        std::vector<std::byte> rows;  // per layer: the cells' K rows, then their V rows
        Pos pos_max() const { return positions.empty() ? -1 : positions.back(); }
    };
    SavedCells read_saved(StateReader &in) const;
    // Replaces what sequence seq holds with the saved cells; loom::Error("[state] ...") when its
    // stream has no room for them (the sequence is then left empty).
    void place_saved(SeqId seq, const SavedCells &saved, std::string_view what);

    // Position shifts waiting to be applied to K (by rotating it by the difference).
    bool has_shift() const { return has_shift_; }
    // Per-cell position deltas since the last shift, and clears them.
    std::vector<int32_t> take_shift();

    // Graph pieces for model layer il (one this cache holds).
    Tensor *k(int64_t il) const { return k_[layer_index(il)]; }
    Tensor *v(int64_t il) const { return params_.k_only ? nullptr : v_[layer_index(il)]; }
    // K of the first n_kv cells of streams [stream0, stream0 + ns) as [head_dim, n_kv,
    // n_head_kv, ns] (a view).
    Tensor *k_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const;
    // V likewise: [n_kv, head_dim_v, n_head_kv, ns] when transposed, else [head_dim_v, n_kv,
    // n_head_kv, ns].
    Tensor *v_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const;
    // Nodes writing k_cur [n_embd_k_gqa, n_tokens] / v_cur into a slot's cells; idxs from
    // fill_k_idxs / fill_v_idxs.
    Tensor *store_k(loom::Context &ctx, int64_t il, Tensor *k_cur, Tensor *k_idxs) const;
    Tensor *store_v(loom::Context &ctx, int64_t il, Tensor *v_cur, Tensor *v_idxs) const;
    int64_t v_idxs_count(int64_t n_tokens) const;

    void fill_k_idxs(const KvSlot &slot, int64_t *out) const;
    void fill_v_idxs(const KvSlot &slot, int64_t *out) const;
    // mask [n_kv, n_tokens / ns, 1, ns] for u's ns streams (u applied): 0 (with ALiBi the
    // negated distance) where a token may see cell c of its stream, -inf elsewhere.
    void fill_mask(const Ubatch &u, int64_t n_kv, float *out) const;

  private:
    size_t layer_index(int64_t il) const {
        LOOM_ASSERT(holds_layer(il));
        return size_t(index_[size_t(il)]);
    }
    // loom::fail("kv", ...) unless 0 <= seq < n_seq_max (what names it: "seq_cp" ...).
    void check_seq(SeqId seq, const char *what) const;
    // Copies cell `from`'s K and V, every layer, into cell `to`.
    void copy_cell(int32_t from, int32_t to);
    // Element d of cell `cell`'s V row in layer index i, where V is stored transposed.
    std::byte *v_trans_element(size_t i, int32_t cell, int64_t d) const;

    HParams hp_;
    KvCacheParams params_;
    KvCells cells_;
    std::vector<int64_t> layers_;  // model layers held, in order
    bool has_shift_ = false;
    int64_t k_rotation_ = 0, v_rotation_ = 0;
    std::vector<int> index_;  // per model layer: its index in k_ / v_, or -1
    std::unique_ptr<loom::Context> ctx_;
    std::vector<std::unique_ptr<Buffer>> buffers_;  // one per buffer type
    std::vector<Tensor *> k_, v_;
};

// "273.00 MiB: 16384 cells x 16 layers, K q8_0, V q8_0, 17408 bytes a cell": a memory's caches
// as the tools report them (an iSWA memory's two joined by " + ", a window in parentheses).
std::string describe_memory(const Memory &memory);

}  // namespace loom::engine
