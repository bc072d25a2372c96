// A sequence's cells of one KV cache as bytes, and back (KvCache::write_seq / read_seq):
//
//   u64 layers | u32 type_k | u32 type_v (kNoV: K only) | u64 K bytes per cell | u64 V bytes
//   per cell | u64 cells | i32 position per cell, ascending | per layer: the cells' K rows, then
//   their V rows (one row per cell, also where V is stored transposed)
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "engine/memory/kv_cache.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

constexpr uint32_t kNoV = 0xFFFFFFFF;
// Positions a context reaches; one near INT32_MAX would overflow the next token's.
constexpr Pos kMaxSavedPos = Pos(1) << 30;

struct CacheShape {
    uint64_t layers = 0;
    uint32_t type_k = 0, type_v = kNoV;
    uint64_t k_bytes = 0, v_bytes = 0;

    bool operator==(const CacheShape &) const = default;
    std::string describe() const {
        return fmt::format(
            "{} layers, K {} ({} bytes per cell), V {}", layers, dtype_name(DType(type_k)), k_bytes,
            type_v == kNoV
                ? std::string("none")
                : fmt::format("{} ({} bytes per cell)", dtype_name(DType(type_v)), v_bytes));
    }
};

CacheShape shape_of(const HParams &hp, const KvCacheParams &p, size_t layers) {
    return {.layers = layers,
            .type_k = uint32_t(p.type_k),
            .type_v = p.k_only ? kNoV : uint32_t(p.type_v),
            .k_bytes = row_size(p.type_k, hp.n_embd_k_gqa()),
            .v_bytes = p.k_only ? 0 : row_size(p.type_v, hp.n_embd_v_gqa())};
}

}  // namespace

void KvCache::write_seq(SeqId seq, StateWriter &out) const {
    check_seq(seq, "state");
    LOOM_ASSERT(!has_shift_);
    std::vector<int32_t> cells;
    const auto [begin, end] = cells_.stream_range(seq);
    for (int32_t c = begin; c < end; ++c) {
        if (cells_[c].seqs.test(size_t(seq))) cells.push_back(c);
    }
    std::sort(cells.begin(), cells.end(),
              [&](int32_t a, int32_t b) { return cells_[a].pos < cells_[b].pos; });

    const CacheShape own = shape_of(hp_, params_, layers_.size());
    out.put(own.layers);
    out.put(own.type_k);
    out.put(own.type_v);
    out.put(own.k_bytes);
    out.put(own.v_bytes);
    out.put(uint64_t(cells.size()));
    for (const int32_t c : cells) out.put(int32_t(cells_[c].pos));
    for (size_t i = 0; i < k_.size(); ++i) {
        const auto *k = static_cast<const std::byte *>(k_[i]->data);
        for (const int32_t c : cells) out.bytes(k + size_t(c) * k_[i]->nb[1], own.k_bytes);
        if (params_.k_only) continue;
        const auto *v = static_cast<const std::byte *>(v_[i]->data);
        for (const int32_t c : cells) {
            if (!params_.v_trans) {
                out.bytes(v + size_t(c) * v_[i]->nb[1], own.v_bytes);
                continue;
            }
            const size_t elt = traits(v_[i]->type).type_size;
            for (int64_t d = 0; d < v_[i]->ne[1]; ++d) out.bytes(v_trans_element(i, c, d), elt);
        }
    }
}

KvCache::SavedCells KvCache::read_saved(StateReader &in) const {
    CacheShape saved;
    saved.layers = in.get<uint64_t>();
    saved.type_k = in.get<uint32_t>();
    saved.type_v = in.get<uint32_t>();
    saved.k_bytes = in.get<uint64_t>();
    saved.v_bytes = in.get<uint64_t>();
    const CacheShape own = shape_of(hp_, params_, layers_.size());
    if (!(saved == own)) {
        const bool types_known =
            saved.type_k < kDTypeCount && (saved.type_v == kNoV || saved.type_v < kDTypeCount);
        fail("state",
             "{}: its KV cache is {}; this context's is {} (another model, or another KV type)",
             in.what(), types_known ? saved.describe() : std::string("of unknown types"),
             own.describe());
    }
    // Each cell takes a position and its rows: a count the rest cannot hold is refused before
    // anything is allocated for it.
    const size_t per_cell = own.layers * (own.k_bytes + own.v_bytes);
    const uint64_t n = in.count(sizeof(int32_t) + per_cell);
    SavedCells cells;
    cells.positions.resize(n);
    for (Pos &p : cells.positions) p = in.get<int32_t>();
    for (size_t t = 0; t < n; ++t) {
        const Pos p = cells.positions[t];
        if (p < 0 || p > kMaxSavedPos || (t > 0 && p <= cells.positions[t - 1])) {
            fail("state", "{}: cell {} has position {} after {}: positions must grow, up to 2^30",
                 in.what(), t, p, t > 0 ? cells.positions[t - 1] : -1);
        }
    }
    cells.rows.resize(per_cell * n);
    in.bytes(cells.rows.data(), cells.rows.size());
    return cells;
}

void KvCache::place_saved(SeqId seq, const SavedCells &saved, std::string_view what) {
    check_seq(seq, "state");
    // The cells the sequence's tokens would take if decoded now, after what it held is gone.
    cells_.seq_rm(seq, 0, -1);
    const size_t n = saved.positions.size();
    if (n == 0) return;
    Ubatch u;
    u.pos = saved.positions;
    u.seq_id.assign(n, seq);
    u.tokens.assign(n, 0);
    u.stream0 = seq % params_.n_stream;
    const std::vector<int32_t> slot = cells_.find_slot(u, params_.window);
    if (slot.empty()) {
        fail("state",
             "{}: the context has no room for its {} cells of sequence {} (raise --ctx-size)", what,
             n, seq);
    }
    cells_.apply(u, slot);
    const CacheShape own = shape_of(hp_, params_, layers_.size());
    const std::byte *r = saved.rows.data();
    for (size_t i = 0; i < k_.size(); ++i) {
        auto *k = static_cast<std::byte *>(k_[i]->data);
        for (const int32_t c : slot) {
            std::memcpy(k + size_t(c) * k_[i]->nb[1], r, own.k_bytes);
            r += own.k_bytes;
        }
        if (params_.k_only) continue;
        auto *v = static_cast<std::byte *>(v_[i]->data);
        for (const int32_t c : slot) {
            if (!params_.v_trans) {
                std::memcpy(v + size_t(c) * v_[i]->nb[1], r, own.v_bytes);
                r += own.v_bytes;
                continue;
            }
            const size_t elt = traits(v_[i]->type).type_size;
            for (int64_t d = 0; d < v_[i]->ne[1]; ++d, r += elt) {
                std::memcpy(v_trans_element(i, c, d), r, elt);
            }
        }
    }
}

}  // namespace loom::engine
