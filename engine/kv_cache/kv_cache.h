#pragma once
// The KV cache: per layer, K and V of every cached token, in cells that remember their position
// and the set of sequences they belong to. The cells form n_stream streams of equal size (one per
// sequence when sequences must not share cells, else one).
//
//   K of layer l: [n_embd_k_gqa, cells per stream, n_stream], one row per cell.
//   V of layer l: the same, or transposed [cells per stream, n_embd_v_gqa, n_stream] (v_trans),
//   which lets the naive attention multiply V by the softmax without a copy.
//
// A ubatch first gets cells (find_slot), its K and V are written into them by set_rows nodes of
// the graph, and the mask lets token t see cell c of its stream when c holds a sequence of t at
// a position <= t's. Cells are numbered across streams: cell c of stream s is s * per + c.
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "engine/context/batch.h"
#include "engine/model/hparams.h"
#include "loom/backend.h"
#include "loom/core.h"

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
};

class KvCache {
  public:
    KvCache(const HParams &hp, const KvCacheParams &params);

    int64_t size() const { return int64_t(cells_.size()); }
    int n_stream() const { return params_.n_stream; }
    bool v_trans() const { return params_.v_trans && !params_.k_only; }
    bool k_only() const { return params_.k_only; }
    DType type_k() const { return params_.type_k; }
    DType type_v() const { return params_.type_v; }
    int64_t used() const;
    // Empty cells in the stream of sequence seq.
    int64_t free_cells(SeqId seq) const;

    // Chooses a cell for each token of u (false when the cache is full) and records the tokens'
    // positions and sequences in them; slot() then holds the cells in token order.
    bool find_slot(const Ubatch &u);
    const std::vector<int32_t> &slot() const { return slot_; }
    // After padding the ubatch (engine/context/ubatch_padding.h): token t of the padded ubatch
    // writes into the cell of original token from[t].
    void repeat_slot(const std::vector<int32_t> &from);
    int64_t cells_per_stream() const { return size() / params_.n_stream; }
    // Cells of each of u's streams the graph attends over: past the last used one in any of
    // them, rounded up to kWindowPad so that graphs of consecutive steps have the same shape.
    // Attention's cost grows with the cells attended, masked or not (the naive path computes
    // every score), while a graph rebuild costs ~0.5 ms once per kWindowPad generated tokens:
    // 32 keeps both small. Results do not depend on it: masked cells weigh exactly 0.
    int64_t n_kv(const Ubatch &u) const;
    static constexpr int64_t kWindowPad = 32;

    // Sequence operations (positions [p0, p1); p1 < 0 means to the end).
    void clear();
    void seq_rm(SeqId seq, Pos p0, Pos p1);  // seq < 0: every sequence
    void seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1);
    void seq_keep(SeqId seq);
    void seq_add(SeqId seq, Pos p0, Pos p1, Pos delta);  // shift positions (K is re-rotated)
    void seq_div(SeqId seq, Pos p0, Pos p1, int d);
    Pos seq_pos_max(SeqId seq) const;  // -1 when empty
    Pos seq_pos_min(SeqId seq) const;

    // Position shifts waiting to be applied to K (by rotating it by the difference).
    bool has_shift() const { return has_shift_; }
    // Per-cell position deltas since the last shift, and clears them.
    std::vector<int32_t> take_shift();

    // Graph pieces for layer il.
    Tensor *k(int64_t il) const { return k_[size_t(il)]; }
    Tensor *v(int64_t il) const { return params_.k_only ? nullptr : v_[size_t(il)]; }
    // K of the first n_kv cells of streams [stream0, stream0 + ns) as [head_dim, n_kv,
    // n_head_kv, ns] (a view).
    Tensor *k_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const;
    // V likewise: [n_kv, head_dim_v, n_head_kv, ns] when transposed, else [head_dim_v, n_kv,
    // n_head_kv, ns].
    Tensor *v_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const;
    // Nodes writing k_cur [n_embd_k_gqa, n_tokens] / v_cur into the slot's cells; idxs from
    // fill_k_idxs / fill_v_idxs.
    Tensor *store_k(loom::Context &ctx, int64_t il, Tensor *k_cur, Tensor *k_idxs) const;
    Tensor *store_v(loom::Context &ctx, int64_t il, Tensor *v_cur, Tensor *v_idxs) const;
    int64_t v_idxs_count(int64_t n_tokens) const;

    void fill_k_idxs(int64_t *out) const;
    void fill_v_idxs(int64_t *out) const;
    // mask [n_kv, n_tokens / ns, 1, ns] for u's ns streams: 0 where a token may see cell c of
    // its stream, -inf elsewhere.
    void fill_mask(const Ubatch &u, int64_t n_kv, float *out) const;

    size_t memory_bytes() const { return buffer_ ? buffer_->size() : 0; }

  private:
    struct Cell {
        Pos pos = -1;
        Pos delta = 0;  // shift not yet applied to K
        std::set<SeqId> seqs;
        bool empty() const { return seqs.empty(); }
    };
    bool in_range(const Cell &c, Pos p0, Pos p1) const {
        return c.pos >= p0 && (p1 < 0 || c.pos < p1);
    }
    // loom::fail("kv", ...) unless 0 <= seq < n_seq_max (what names it: "seq_cp" ...).
    void check_seq(SeqId seq, const char *what) const;
    // Copies cell `from`'s K and V, every layer, into cell `to`.
    void copy_cell(int32_t from, int32_t to);
    // Cells [begin, end) of the stream holding sequence seq.
    std::pair<int32_t, int32_t> stream_cells(SeqId seq) const;

    HParams hp_;
    KvCacheParams params_;
    std::vector<Cell> cells_;
    std::vector<int32_t> slot_;
    bool has_shift_ = false;
    std::unique_ptr<loom::Context> ctx_;
    std::unique_ptr<Buffer> buffer_;
    std::vector<Tensor *> k_, v_;
};

}  // namespace loom::engine
