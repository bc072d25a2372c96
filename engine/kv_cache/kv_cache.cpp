#include "engine/kv_cache/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "loom/error.h"

namespace loom::engine {

KvCache::KvCache(const HParams &hp, const KvCacheParams &params) : hp_(hp), params_(params) {
    if (params.size <= 0) fail("kv", "cache size {} must be positive", params.size);
    // Before anything is allocated: a context the machine cannot hold is an error that says so.
    const double per_cell =
        double(hp.n_layer) *
        (double(row_size(params.type_k, hp.n_embd_k_gqa())) +
         (params.k_only ? 0.0 : double(row_size(params.type_v, hp.n_embd_v_gqa()))));
    const double needed =
        per_cell * double(params.size) + double(sizeof(Cell)) * double(params.size);
    if (needed > double(available_memory())) {
        fail("kv",
             "a KV cache of {} cells needs {} of memory and {} is available (lower "
             "--ctx-size)",
             params.size, gib(needed), gib(double(available_memory())));
    }
    cells_.resize(size_t(params.size));
    if (params.n_stream <= 0 || params.size % params.n_stream != 0) {
        fail("kv", "{} cells cannot be split into {} streams", params.size, params.n_stream);
    }
    if (params.k_only && hp.n_embd_head_v > hp.n_embd_head_k) {
        fail("kv", "V heads ({}) cannot be read from shorter K heads ({})", hp.n_embd_head_v,
             hp.n_embd_head_k);
    }
    const size_t n_tensors = size_t(2 * hp.n_layer);
    ctx_ = std::make_unique<loom::Context>(
        ContextParams{.mem_size = n_tensors * 512 + 4096, .no_alloc = true});
    std::vector<Tensor *> all;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const int64_t per = params.size / params.n_stream, ns = params.n_stream;
        Tensor *k = ctx_->new_tensor(params.type_k, {hp.n_embd_k_gqa(), per, ns});
        Tensor *v = params.v_trans ? ctx_->new_tensor(params.type_v, {per, hp.n_embd_v_gqa(), ns})
                                   : ctx_->new_tensor(params.type_v, {hp.n_embd_v_gqa(), per, ns});
        set_name(k, "cache_k_l" + std::to_string(il));
        k_.push_back(k);
        all.push_back(k);
        if (params.k_only) continue;
        set_name(v, "cache_v_l" + std::to_string(il));
        v_.push_back(v);
        all.push_back(v);
    }
    buffer_ = place_tensors(host_buffer_type(), all);
    // Cells outside every sequence are masked, but their (zero) values still enter the products.
    buffer_->clear(0);
}

int64_t KvCache::used() const {
    return std::count_if(cells_.begin(), cells_.end(), [](const Cell &c) { return !c.empty(); });
}

void KvCache::check_seq(SeqId seq, const char *what) const {
    if (seq < 0 || seq >= params_.n_seq_max) {
        fail("kv", "{}: sequence id {} is outside 0..{}", what, seq, params_.n_seq_max - 1);
    }
}

int64_t KvCache::free_cells(SeqId seq) const {
    const auto [begin, end] = stream_cells(seq);
    return std::count_if(cells_.begin() + begin, cells_.begin() + end,
                         [](const Cell &c) { return c.empty(); });
}

std::pair<int32_t, int32_t> KvCache::stream_cells(SeqId seq) const {
    const int32_t per_stream = int32_t(cells_per_stream());
    const int32_t stream = seq % params_.n_stream;
    return {stream * per_stream, (stream + 1) * per_stream};
}

bool KvCache::find_slot(const Ubatch &u) {
    slot_.clear();
    // The first free cells of each token's stream, in token order; a stream's search resumes
    // after the cell its previous token took.
    std::vector<int32_t> resume(size_t(params_.n_stream), 0);
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        const SeqId seq = u.seq_id[size_t(t)];
        const auto [begin, end] = stream_cells(seq);
        int32_t c = std::max(begin, resume[size_t(seq % params_.n_stream)]);
        while (c < end && !cells_[size_t(c)].empty()) ++c;
        if (c == end) {
            slot_.clear();
            return false;
        }
        slot_.push_back(c);
        resume[size_t(seq % params_.n_stream)] = c + 1;
    }
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        Cell &cell = cells_[size_t(slot_[size_t(t)])];
        cell.pos = u.pos[size_t(t)];
        cell.delta = 0;
        cell.seqs = {u.seq_id[size_t(t)]};
    }
    return true;
}

void KvCache::repeat_slot(const std::vector<int32_t> &from) {
    std::vector<int32_t> padded;
    padded.reserve(from.size());
    for (const int32_t i : from) padded.push_back(slot_[size_t(i)]);
    slot_ = std::move(padded);
}

int64_t KvCache::n_kv(const Ubatch &u) const {
    const int64_t per = cells_per_stream();
    int64_t last = 0;  // past the last used cell, counted within its stream
    for (int s = u.stream0; s < u.stream0 + u.n_stream; ++s) {
        for (int64_t c = per; c > last; --c) {
            if (!cells_[size_t(s * per + c - 1)].empty()) {
                last = c;
                break;
            }
        }
    }
    return std::min(
        per, std::max<int64_t>(kWindowPad, (last + kWindowPad - 1) / kWindowPad * kWindowPad));
}

void KvCache::clear() {
    for (Cell &c : cells_) c = Cell{};
    has_shift_ = false;
}

void KvCache::seq_rm(SeqId seq, Pos p0, Pos p1) {
    if (seq >= 0) check_seq(seq, "seq_rm");
    for (Cell &c : cells_) {
        if (c.empty() || !in_range(c, p0, p1)) continue;
        if (seq < 0) {
            c.seqs.clear();
        } else {
            c.seqs.erase(seq);
        }
        if (c.empty()) c = Cell{};
    }
}

void KvCache::seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) {
    check_seq(src, "seq_cp");
    check_seq(dst, "seq_cp");
    if (src == dst) return;
    if (stream_cells(src) == stream_cells(dst)) {  // the same cells serve both sequences
        for (Cell &c : cells_) {
            if (c.seqs.contains(src) && in_range(c, p0, p1)) c.seqs.insert(dst);
        }
        return;
    }
    // Another stream: the cells' K and V are copied into free cells of dst's stream.
    const auto [begin, end] = stream_cells(src);
    std::vector<std::pair<int32_t, int32_t>> moves;  // (from, to)
    int32_t to = stream_cells(dst).first;
    const int32_t to_end = stream_cells(dst).second;
    for (int32_t from = begin; from < end; ++from) {
        const Cell &c = cells_[size_t(from)];
        if (!c.seqs.contains(src) || !in_range(c, p0, p1)) continue;
        while (to < to_end && !cells_[size_t(to)].empty()) ++to;
        if (to == to_end) fail("kv", "seq_cp: the stream of sequence {} is full", dst);
        moves.emplace_back(from, to++);
    }
    for (const auto &[from, into] : moves) {
        copy_cell(from, into);
        Cell &cell = cells_[size_t(into)];
        cell.pos = cells_[size_t(from)].pos;
        cell.delta = cells_[size_t(from)].delta;
        cell.seqs = {dst};
    }
}

void KvCache::copy_cell(int32_t from, int32_t to) {
    for (size_t il = 0; il < k_.size(); ++il) {
        auto *k = static_cast<std::byte *>(k_[il]->data);
        std::memcpy(k + size_t(to) * k_[il]->nb[1], k + size_t(from) * k_[il]->nb[1],
                    k_[il]->nb[1]);
        if (params_.k_only) continue;
        auto *v = static_cast<std::byte *>(v_[il]->data);
        if (!params_.v_trans) {
            std::memcpy(v + size_t(to) * v_[il]->nb[1], v + size_t(from) * v_[il]->nb[1],
                        v_[il]->nb[1]);
            continue;
        }
        // V^T: one element per row of V, in the rows of the cell's stream
        const size_t elt = traits(v_[il]->type).type_size;
        const int64_t per = cells_per_stream();
        const auto element = [&](int32_t cell, int64_t d) {
            return v + size_t(cell / per) * v_[il]->nb[2] + size_t(d) * v_[il]->nb[1] +
                   size_t(cell % per) * elt;
        };
        for (int64_t d = 0; d < v_[il]->ne[1]; ++d) {
            std::memcpy(element(to, d), element(from, d), elt);
        }
    }
}

void KvCache::seq_keep(SeqId seq) {
    check_seq(seq, "seq_keep");
    for (Cell &c : cells_) {
        if (c.seqs.contains(seq)) {
            c.seqs = {seq};
        } else {
            c = Cell{};
        }
    }
}

void KvCache::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
    check_seq(seq, "seq_add");
    if (delta == 0) return;
    for (Cell &c : cells_) {
        if (!c.seqs.contains(seq) || !in_range(c, p0, p1)) continue;
        has_shift_ = true;
        c.pos += delta;
        c.delta += delta;
        if (c.pos < 0) c = Cell{};  // shifted out of the context
    }
}

void KvCache::seq_div(SeqId seq, Pos p0, Pos p1, int d) {
    check_seq(seq, "seq_div");
    if (d == 1) return;
    if (d <= 0) fail("kv", "seq_div by {}", d);
    for (Cell &c : cells_) {
        if (!c.seqs.contains(seq) || !in_range(c, p0, p1)) continue;
        has_shift_ = true;
        const Pos p = c.pos;
        c.pos /= d;
        c.delta += c.pos - p;
    }
}

Pos KvCache::seq_pos_max(SeqId seq) const {
    Pos m = -1;
    for (const Cell &c : cells_) {
        if (c.seqs.contains(seq)) m = std::max(m, c.pos);
    }
    return m;
}

Pos KvCache::seq_pos_min(SeqId seq) const {
    Pos m = -1;
    for (const Cell &c : cells_) {
        if (c.seqs.contains(seq) && (m < 0 || c.pos < m)) m = c.pos;
    }
    return m;
}

std::vector<int32_t> KvCache::take_shift() {
    std::vector<int32_t> deltas(cells_.size());
    for (size_t i = 0; i < cells_.size(); ++i) {
        deltas[i] = cells_[i].delta;
        cells_[i].delta = 0;
    }
    has_shift_ = false;
    return deltas;
}

Tensor *KvCache::k_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const {
    Tensor *k = k_[size_t(il)];
    const int64_t head = hp_.n_embd_head_k;
    const size_t elt = traits(k->type).type_size;
    return view_4d(ctx, k, head, n_kv, hp_.n_head_kv, ns, k->nb[1], head * elt, k->nb[2],
                   size_t(stream0) * k->nb[2]);
}

Tensor *KvCache::v_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const {
    if (params_.k_only) {  // the first n_embd_head_v values of each K head
        Tensor *k = k_[size_t(il)];
        const size_t head_bytes = size_t(hp_.n_embd_head_k) * traits(k->type).type_size;
        return view_4d(ctx, k, hp_.n_embd_head_v, n_kv, hp_.n_head_kv, ns, k->nb[1], head_bytes,
                       k->nb[2], size_t(stream0) * k->nb[2]);
    }
    Tensor *v = v_[size_t(il)];
    const int64_t head = hp_.n_embd_head_v;
    const size_t elt = traits(v->type).type_size;
    const size_t offset = size_t(stream0) * v->nb[2];
    if (params_.v_trans) {
        // element (cell, d) of head h at row h * head + d of the stream
        return view_4d(ctx, v, n_kv, head, hp_.n_head_kv, ns, v->nb[1], v->nb[1] * size_t(head),
                       v->nb[2], offset);
    }
    return view_4d(ctx, v, head, n_kv, hp_.n_head_kv, ns, v->nb[1], head * elt, v->nb[2], offset);
}

Tensor *KvCache::store_k(loom::Context &ctx, int64_t il, Tensor *k_cur, Tensor *k_idxs) const {
    Tensor *k = k_[size_t(il)];
    return set_rows(ctx, view_2d(ctx, k, k->ne[0], size(), k->nb[1], 0), k_cur, k_idxs);
}

int64_t KvCache::v_idxs_count(int64_t n_tokens) const {
    return params_.v_trans ? n_tokens * hp_.n_embd_v_gqa() : n_tokens;
}

Tensor *KvCache::store_v(loom::Context &ctx, int64_t il, Tensor *v_cur, Tensor *v_idxs) const {
    Tensor *v = v_[size_t(il)];
    if (!params_.v_trans) {
        return set_rows(ctx, view_2d(ctx, v, v->ne[0], size(), v->nb[1], 0), v_cur, v_idxs);
    }
    // Every element is its own row of one value (fill_v_idxs says where each goes).
    const int64_t n = v_cur->ne[0] * v_cur->ne[1];
    Tensor *cells = view_2d(ctx, v, 1, v->nelements(), traits(v->type).type_size, 0);
    return set_rows(ctx, cells, reshape(ctx, cont(ctx, v_cur), {1, n}), v_idxs);
}

void KvCache::fill_k_idxs(int64_t *out) const {
    for (size_t t = 0; t < slot_.size(); ++t) out[t] = slot_[t];
}

void KvCache::fill_v_idxs(int64_t *out) const {
    if (!params_.v_trans) return fill_k_idxs(out);
    // element d of the token in cell c of stream s: row d of that stream's [per, n_embd_v]
    const int64_t n_embd_v = hp_.n_embd_v_gqa(), per = cells_per_stream();
    for (size_t t = 0; t < slot_.size(); ++t) {
        const int64_t stream = slot_[t] / per, cell = slot_[t] % per;
        for (int64_t d = 0; d < n_embd_v; ++d) {
            out[int64_t(t) * n_embd_v + d] = (stream * n_embd_v + d) * per + cell;
        }
    }
}

void KvCache::fill_mask(const Ubatch &u, int64_t n_kv, float *out) const {
    const float hidden = -std::numeric_limits<float>::infinity();
    std::fill(out, out + n_kv * u.n_tokens(), hidden);
    const int64_t per_stream_tokens = u.n_tokens() / u.n_stream, per = cells_per_stream();
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        const Pos p = u.pos[size_t(t)];
        const SeqId s = u.seq_id[size_t(t)];
        // Token t is row t % per_stream_tokens of stream t / per_stream_tokens: the rows of the
        // mask follow the ubatch's tokens, whose cells are those of their stream.
        const int64_t first = (u.stream0 + t / per_stream_tokens) * per;
        float *row = out + t * n_kv;
        for (int64_t c = 0; c < n_kv; ++c) {
            const Cell &cell = cells_[size_t(first + c)];
            if (cell.seqs.contains(s) && cell.pos <= p) row[c] = 0.0f;
        }
    }
}

}  // namespace loom::engine
