#pragma once
// The bookkeeping of a KV cache's cells, apart from the tensors that hold K and V: the position
// each cell holds, the sequences it belongs to and the position shift its K still waits for. The
// cells form n_stream streams of equal size; sequence s lives in stream s % n_stream, and cell c
// of stream s is cell s * per_stream + c.
//
// Slot finding works on a copy: a batch's ubatches are all placed on a copy first, so a batch
// that does not fit is refused before anything changes (Memory::plan).
#include <bitset>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/context/batch.h"
#include "engine/model/attn_window.h"

namespace loom::engine {

// Sequence ids are below this (a cell's sequences are a bitset of this size).
inline constexpr int kMaxSequences = 256;

struct KvCell {
    Pos pos = -1;
    Pos delta = 0;  // shift not yet applied to K
    std::bitset<kMaxSequences> seqs;
    bool empty() const { return seqs.none(); }
};

class KvCells {
  public:
    KvCells(int64_t size, int n_stream);

    int64_t size() const { return int64_t(cells_.size()); }
    int n_stream() const { return n_stream_; }
    int64_t per_stream() const { return size() / n_stream_; }
    const KvCell &operator[](int64_t c) const { return cells_[size_t(c)]; }
    // Cells [begin, end) of the stream holding sequence seq.
    std::pair<int32_t, int32_t> stream_range(SeqId seq) const;

    int64_t used() const;
    int64_t free_in_stream(int stream) const;

    // A cell for each token of u, in token order (empty when the stream of one is full): the
    // first empty cells of each stream. With a window, the stream's cells are a ring instead,
    // searched from after the cell it gave last, and a cell is also free when the window of
    // every sequence it holds has moved past it: hidden from each one's next position, so from
    // every later token (positions only grow).
    std::vector<int32_t> find_slot(const Ubatch &u, const AttnWindow &window) const;
    // Records u's tokens in the cells find_slot gave them.
    void apply(const Ubatch &u, const std::vector<int32_t> &slot);
    // Cells of each of u's streams that attention covers: past the last used one in any of
    // them, rounded up to `pad` (at most the stream's size).
    int64_t n_kv(const Ubatch &u, int64_t pad) const;

    // Sequence operations (positions [p0, p1); p1 < 0 means to the end). seq_rm with seq < 0
    // removes every sequence. Ids are checked by the caller.
    void clear();
    void seq_rm(SeqId seq, Pos p0, Pos p1);
    // Within one stream: dst joins src's cells.
    void seq_share(SeqId src, SeqId dst, Pos p0, Pos p1);
    // The cells of src that a copy into another stream takes: (from, to) pairs, to the first
    // free cells of dst's stream; empty with ok = false when they do not fit.
    std::vector<std::pair<int32_t, int32_t>> plan_copy(SeqId src, SeqId dst, Pos p0, Pos p1,
                                                       bool &ok) const;
    // Cell `to` now holds src's entry of cell `from`, for dst alone.
    void set_copy(int32_t from, int32_t to, SeqId dst);
    void seq_keep(SeqId seq);
    // Both return whether any cell's position changed (its K then waits for a shift).
    bool seq_add(SeqId seq, Pos p0, Pos p1, Pos delta);
    bool seq_div(SeqId seq, Pos p0, Pos p1, int d);
    Pos seq_pos_max(SeqId seq) const;  // -1 when empty
    Pos seq_pos_min(SeqId seq) const;
    // Per-cell position deltas since the last shift, and clears them.
    std::vector<int32_t> take_shift();

  private:
    // An emptied stream's ring starts again at its first cell, so that a sequence placed in it
    // takes the same cells whatever the stream held before.
    void restart_empty_rings();
    static bool in_range(const KvCell &c, Pos p0, Pos p1) {
        return c.pos >= p0 && (p1 < 0 || c.pos < p1);
    }

    std::vector<KvCell> cells_;
    std::vector<int32_t> head_;  // per stream: the cell after the one the last slot ended with
    int n_stream_;
};

}  // namespace loom::engine
