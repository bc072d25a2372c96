#pragma once
// What a Context remembers of the tokens it has decoded (llama.cpp's llama_memory_i): one or more
// KV caches, each holding K and V for some of the layers. Decoding a batch goes
//
//   plan(ubatches)  -> a slot per ubatch and cache, found on a copy (a batch that does not fit is
//                      refused before anything changes)
//   apply(u, slot)  -> the cells take u's tokens; the graph's inputs read the same slot (its
//                      cells, how many cells attention covers), passed in GraphParams
//
// and the sequence operations edit what is remembered between batches.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/context/batch.h"

namespace loom::engine {

class KvCache;

// Where one ubatch goes in one KV cache.
struct KvSlot {
    std::vector<int32_t> cells;  // per token of the ubatch: the cell its K and V are written to
    int64_t n_kv = 0;            // cells of each of the ubatch's streams that attention covers
};

// One ubatch's slot in each KV cache of a memory, in the order of Memory::cache().
struct UbatchMemory {
    std::vector<KvSlot> slots;

    // After padding the ubatch (engine/context/ubatch_padding.h): token t of the padded ubatch
    // writes into the cell of original token from[t].
    void repeat(const std::vector<int32_t> &from);
};

class Memory {
  public:
    virtual ~Memory() = default;

    // The KV caches, and which one holds layer il.
    virtual int n_caches() const = 0;
    virtual const KvCache &cache(int i) const = 0;
    virtual KvCache &cache(int i) = 0;
    virtual int cache_of_layer(int64_t il) const = 0;

    // A slot per cache for each ubatch, in order, as if each were applied after the one before;
    // the memory is left as it is. loom::Error("[decode] ...") when one does not fit.
    virtual std::vector<UbatchMemory> plan(std::span<const Ubatch> ubatches) const = 0;
    // u's tokens take the cells planned for them.
    virtual void apply(const Ubatch &u, const UbatchMemory &m) = 0;

    // Sequence operations, on every cache (positions [p0, p1); p1 < 0 means to the end).
    // Sequence ids are checked: loom::Error("[kv] ...").
    virtual void clear() = 0;
    virtual void seq_rm(SeqId seq, Pos p0, Pos p1) = 0;  // seq < 0: every sequence
    virtual void seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) = 0;
    virtual void seq_keep(SeqId seq) = 0;
    virtual void seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) = 0;  // K is rotated to match
    virtual void seq_div(SeqId seq, Pos p0, Pos p1, int d) = 0;
    virtual Pos seq_pos_max(SeqId seq) const = 0;  // -1 when empty
    // The first position from which the sequence is whole in every cache (a sliding-window
    // cache forgets older ones): -1 when empty.
    virtual Pos seq_pos_min(SeqId seq) const = 0;
    // Whether the sequence, cut back to its positions below p, still holds everything a token
    // at p attends to (a sliding-window cache may have let part of that window go).
    virtual bool seq_can_resume(SeqId seq, Pos p) const = 0;

    virtual int64_t size() const = 0;  // cells of the largest cache: the context's length
    virtual int64_t used() const = 0;  // of those
    virtual size_t memory_bytes() const = 0;
};

}  // namespace loom::engine
