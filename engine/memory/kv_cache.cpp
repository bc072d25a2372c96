#include "engine/memory/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "loom/error.h"

namespace loom::engine {

namespace {

// The model layers a cache holds: those listed, or every layer.
std::vector<int64_t> held_layers(const HParams &hp, const KvCacheParams &params) {
    if (params.cells_only) return {};
    std::vector<int64_t> layers = params.layers;
    if (layers.empty()) {
        for (int64_t il = 0; il < hp.n_layer; ++il) layers.push_back(il);
    }
    return layers;
}

// The parameters, checked before anything is allocated: a context the machine cannot hold is an
// error that says so.
const KvCacheParams &checked(const HParams &hp, const KvCacheParams &params) {
    if (params.size <= 0) fail("kv", "cache size {} must be positive", params.size);
    if (params.n_stream <= 0 || params.size % params.n_stream != 0) {
        fail("kv", "{} cells cannot be split into {} streams", params.size, params.n_stream);
    }
    if (params.n_seq_max <= 0 || params.n_seq_max > kMaxSequences) {
        fail("kv", "{} sequences asked for, at most {} are supported", params.n_seq_max,
             kMaxSequences);
    }
    if (params.window.any() && params.window.n_swa <= 0) {
        fail("kv", "a sliding window of {} positions", params.window.n_swa);
    }
    if (params.k_only && hp.n_embd_head_v > hp.n_embd_head_k) {
        fail("kv", "V heads ({}) cannot be read from shorter K heads ({})", hp.n_embd_head_v,
             hp.n_embd_head_k);
    }
    const double per_cell =
        double(held_layers(hp, params).size()) *
        (double(row_size(params.type_k, hp.n_embd_k_gqa())) +
         (params.k_only ? 0.0 : double(row_size(params.type_v, hp.n_embd_v_gqa()))));
    const double needed =
        per_cell * double(params.size) + double(sizeof(KvCell)) * double(params.size);
    if (needed > double(available_memory())) {
        fail("kv",
             "a KV cache of {} cells needs {} of memory and {} is available (lower "
             "--ctx-size)",
             params.size, gib(needed), gib(double(available_memory())));
    }
    return params;
}

// KvCache::k_rotation / v_rotation: llama.cpp's rule (llama_kv_cache, attn_rot_k / attn_rot_v).
int64_t rotation_run(DType type, int64_t head, bool k_only, bool is_v) {
    constexpr int64_t kRun = 64;
    if (k_only || !traits(type).is_quantized || head % kRun != 0) return 0;
    if (is_v) return kRun;  // V: the smallest run, which llama.cpp found to work best
    int64_t run = kRun;
    while (head % (2 * run) == 0) run *= 2;
    return run;
}

}  // namespace

KvCache::KvCache(const HParams &hp, const KvCacheParams &params)
    : hp_(hp),
      params_(checked(hp, params)),
      cells_(params.size, params.n_stream),
      layers_(held_layers(hp, params)),
      k_rotation_(rotation_run(params.type_k, hp.n_embd_head_k, params.k_only, false)),
      v_rotation_(rotation_run(params.type_v, hp.n_embd_head_v, params.k_only, true)) {
    index_.assign(size_t(hp.n_layer), -1);
    for (size_t i = 0; i < layers_.size(); ++i) index_.at(size_t(layers_[i])) = int(i);
    const size_t n_tensors = 2 * layers_.size();
    ctx_ = std::make_unique<loom::Context>(
        ContextParams{.mem_size = n_tensors * 512 + 4096, .no_alloc = true});
    std::map<BufferType *, std::vector<Tensor *>> by_type;
    auto place = [&](Tensor *t, int64_t il) {
        BufferType *type =
            size_t(il) < params.buffer_types.size() ? params.buffer_types[size_t(il)] : nullptr;
        by_type[type != nullptr ? type : &host_buffer_type()].push_back(t);
    };
    const int64_t per = params.size / params.n_stream, ns = params.n_stream;
    for (const int64_t il : layers_) {
        Tensor *k = ctx_->new_tensor(params.type_k, {hp.n_embd_k_gqa(), per, ns});
        set_name(k, "cache_k_l" + std::to_string(il));
        k_.push_back(k);
        place(k, il);
        if (params.k_only) continue;
        Tensor *v = params.v_trans ? ctx_->new_tensor(params.type_v, {per, hp.n_embd_v_gqa(), ns})
                                   : ctx_->new_tensor(params.type_v, {hp.n_embd_v_gqa(), per, ns});
        set_name(v, "cache_v_l" + std::to_string(il));
        v_.push_back(v);
        place(v, il);
    }
    for (auto &[type, tensors] : by_type) {
        buffers_.push_back(place_tensors(*type, tensors));
        // Cells outside every sequence are masked, but their (zero) values still enter the
        // products.
        buffers_.back()->clear(0);
    }
}

size_t KvCache::cell_bytes() const {
    const size_t k = row_size(params_.type_k, hp_.n_embd_k_gqa());
    const size_t v = params_.k_only ? 0 : row_size(params_.type_v, hp_.n_embd_v_gqa());
    return layers_.size() * (k + v);
}

std::string describe_memory(const Memory &memory) {
    std::string caches;
    for (int i = 0; i < memory.n_caches(); ++i) {
        const KvCache &kv = memory.cache(i);
        caches += fmt::format("{}{} cells x {} layers, K {}", i == 0 ? "" : " + ", kv.size(),
                              kv.layers().size(), dtype_name(kv.type_k()));
        if (!kv.k_only()) caches += fmt::format(", V {}", dtype_name(kv.type_v()));
        caches += fmt::format(", {} bytes a cell", kv.cell_bytes());
        if (kv.window().any()) caches += fmt::format(" (window {})", kv.window().n_swa);
    }
    return fmt::format("{:.2f} MiB: {}", double(memory.memory_bytes()) / (1 << 20), caches);
}

size_t KvCache::memory_bytes() const {
    size_t bytes = 0;
    for (const auto &b : buffers_) bytes += b->size();
    return bytes;
}

void KvCache::check_seq(SeqId seq, const char *what) const {
    if (seq < 0 || seq >= params_.n_seq_max) {
        fail("kv", "{}: sequence id {} is outside 0..{}", what, seq, params_.n_seq_max - 1);
    }
}

std::vector<KvSlot> KvCache::plan_on(KvCells &cells, std::span<const Ubatch> ubatches) const {
    std::vector<KvSlot> slots;
    for (const Ubatch &u : ubatches) {
        KvSlot slot{.cells = cells.find_slot(u, params_.window)};
        if (slot.cells.empty()) {
            const int stream = u.seq_id.front() % params_.n_stream;
            fail("decode",
                 "the context cannot take {} more tokens: {} of its {} cells are in use{} (raise "
                 "--ctx-size)",
                 u.n_tokens(), cells.per_stream() - cells.free_in_stream(stream),
                 cells.per_stream(), params_.window.any() ? " in the sliding-window cache" : "");
        }
        cells.apply(u, slot.cells);
        slot.n_kv = cells.n_kv(u, kWindowPad);
        slots.push_back(std::move(slot));
    }
    return slots;
}

std::vector<UbatchMemory> KvCache::plan(std::span<const Ubatch> ubatches) const {
    KvCells copy = cells_;
    std::vector<UbatchMemory> plans;
    for (KvSlot &slot : plan_on(copy, ubatches)) plans.push_back({.slots = {std::move(slot)}});
    return plans;
}

void KvCache::clear() {
    cells_.clear();
    has_shift_ = false;
}

bool KvCache::seq_can_resume(SeqId seq, Pos p) const {
    if (!params_.window.any() || p <= 0) return true;
    // Every position from the first one p's window shows up to p - 1 must still be cached.
    Pos first = p - 1;
    while (first > 0 && !params_.window.hides(first - 1, p)) --first;
    int64_t held = 0;
    for (int64_t c = 0; c < cells_.size(); ++c) {
        const KvCell &cell = cells_[c];
        held += cell.seqs.test(size_t(seq)) && cell.pos >= first && cell.pos < p;
    }
    return held == p - first;
}

void KvCache::seq_rm(SeqId seq, Pos p0, Pos p1) {
    if (seq >= 0) check_seq(seq, "seq_rm");
    cells_.seq_rm(seq, p0, p1);
}

void KvCache::seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) {
    check_seq(src, "seq_cp");
    check_seq(dst, "seq_cp");
    if (src == dst) return;
    if (cells_.stream_range(src) == cells_.stream_range(dst)) {  // the same cells serve both
        cells_.seq_share(src, dst, p0, p1);
        return;
    }
    // Another stream: the cells' K and V are copied into free cells of dst's stream.
    bool ok = false;
    const auto moves = cells_.plan_copy(src, dst, p0, p1, ok);
    if (!ok) fail("kv", "seq_cp: the stream of sequence {} is full", dst);
    for (const auto &[from, to] : moves) {
        copy_cell(from, to);
        cells_.set_copy(from, to, dst);
    }
}

void KvCache::copy_cell(int32_t from, int32_t to) {
    for (size_t i = 0; i < k_.size(); ++i) {
        auto *k = static_cast<std::byte *>(k_[i]->data);
        std::memcpy(k + size_t(to) * k_[i]->nb[1], k + size_t(from) * k_[i]->nb[1], k_[i]->nb[1]);
        if (params_.k_only) continue;
        auto *v = static_cast<std::byte *>(v_[i]->data);
        if (!params_.v_trans) {
            std::memcpy(v + size_t(to) * v_[i]->nb[1], v + size_t(from) * v_[i]->nb[1],
                        v_[i]->nb[1]);
            continue;
        }
        const size_t elt = traits(v_[i]->type).type_size;
        for (int64_t d = 0; d < v_[i]->ne[1]; ++d) {
            std::memcpy(v_trans_element(i, to, d), v_trans_element(i, from, d), elt);
        }
    }
}

// V^T: one element per row of V, in the rows of the cell's stream.
std::byte *KvCache::v_trans_element(size_t i, int32_t cell, int64_t d) const {
    const Tensor *v = v_[i];
    const int64_t per = cells_per_stream();
    return static_cast<std::byte *>(v->data) + size_t(cell / per) * v->nb[2] +
           size_t(d) * v->nb[1] + size_t(cell % per) * traits(v->type).type_size;
}

void KvCache::seq_keep(SeqId seq) {
    check_seq(seq, "seq_keep");
    cells_.seq_keep(seq);
}

void KvCache::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
    check_seq(seq, "seq_add");
    if (delta == 0) return;
    has_shift_ |= cells_.seq_add(seq, p0, p1, delta);
}

void KvCache::seq_div(SeqId seq, Pos p0, Pos p1, int d) {
    check_seq(seq, "seq_div");
    if (d <= 0) fail("kv", "seq_div by {}", d);
    if (d == 1) return;
    has_shift_ |= cells_.seq_div(seq, p0, p1, d);
}

std::vector<int32_t> KvCache::take_shift() {
    has_shift_ = false;
    return cells_.take_shift();
}

Tensor *KvCache::k_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const {
    Tensor *k = k_[layer_index(il)];
    // A head's bytes: whole blocks for a block format.
    const size_t head_bytes = row_size(k->type, hp_.n_embd_head_k);
    return view_4d(ctx, k, hp_.n_embd_head_k, n_kv, hp_.n_head_kv, ns, k->nb[1], head_bytes,
                   k->nb[2], size_t(stream0) * k->nb[2]);
}

Tensor *KvCache::v_view(loom::Context &ctx, int64_t il, int64_t n_kv, int stream0, int ns) const {
    if (params_.k_only) {  // the first n_embd_head_v values of each K head
        Tensor *k = k_[layer_index(il)];
        const size_t head_bytes = row_size(k->type, hp_.n_embd_head_k);
        return view_4d(ctx, k, hp_.n_embd_head_v, n_kv, hp_.n_head_kv, ns, k->nb[1], head_bytes,
                       k->nb[2], size_t(stream0) * k->nb[2]);
    }
    Tensor *v = v_[layer_index(il)];
    const int64_t head = hp_.n_embd_head_v;
    const size_t offset = size_t(stream0) * v->nb[2];
    if (params_.v_trans) {
        // element (cell, d) of head h at row h * head + d of the stream
        return view_4d(ctx, v, n_kv, head, hp_.n_head_kv, ns, v->nb[1], v->nb[1] * size_t(head),
                       v->nb[2], offset);
    }
    return view_4d(ctx, v, head, n_kv, hp_.n_head_kv, ns, v->nb[1], row_size(v->type, head),
                   v->nb[2], offset);
}

Tensor *KvCache::store_k(loom::Context &ctx, int64_t il, Tensor *k_cur, Tensor *k_idxs) const {
    Tensor *k = k_[layer_index(il)];
    return set_rows(ctx, view_2d(ctx, k, k->ne[0], size(), k->nb[1], 0), k_cur, k_idxs);
}

int64_t KvCache::v_idxs_count(int64_t n_tokens) const {
    return params_.v_trans ? n_tokens * hp_.n_embd_v_gqa() : n_tokens;
}

Tensor *KvCache::store_v(loom::Context &ctx, int64_t il, Tensor *v_cur, Tensor *v_idxs) const {
    Tensor *v = v_[layer_index(il)];
    if (!params_.v_trans) {
        return set_rows(ctx, view_2d(ctx, v, v->ne[0], size(), v->nb[1], 0), v_cur, v_idxs);
    }
    // Every element is its own row of one value (fill_v_idxs says where each goes).
    const int64_t n = v_cur->ne[0] * v_cur->ne[1];
    Tensor *cells = view_2d(ctx, v, 1, v->nelements(), traits(v->type).type_size, 0);
    return set_rows(ctx, cells, reshape(ctx, contiguous(ctx, v_cur), {1, n}), v_idxs);
}

void KvCache::fill_k_idxs(const KvSlot &slot, int64_t *out) const {
    for (size_t t = 0; t < slot.cells.size(); ++t) out[t] = slot.cells[t];
}

void KvCache::fill_v_idxs(const KvSlot &slot, int64_t *out) const {
    if (!params_.v_trans) return fill_k_idxs(slot, out);
    // element d of the token in cell c of stream s: row d of that stream's [per, n_embd_v]
    const int64_t n_embd_v = hp_.n_embd_v_gqa(), per = cells_per_stream();
    for (size_t t = 0; t < slot.cells.size(); ++t) {
        const int64_t stream = slot.cells[t] / per, cell = slot.cells[t] % per;
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
        const auto s = size_t(u.seq_id[size_t(t)]);
        // Token t is row t % per_stream_tokens of stream t / per_stream_tokens: the rows of the
        // mask follow the ubatch's tokens, whose cells are those of their stream.
        const int64_t first = (u.stream0 + t / per_stream_tokens) * per;
        float *row = out + t * n_kv;
        for (int64_t c = 0; c < n_kv; ++c) {
            const KvCell &cell = cells_[first + c];
            if (cell.seqs.test(s) && cell.pos <= p && !params_.window.hides(cell.pos, p)) {
                row[c] = params_.alibi ? -float(p - cell.pos) : 0.0f;
            }
        }
    }
}

}  // namespace loom::engine
