#include "engine/memory/kv_cache_iswa.h"

#include <algorithm>

namespace loom::engine {

int64_t KvCacheIswa::swa_cells_per_stream(const KvCacheParams &full, const AttnWindow &window,
                                          int64_t n_ubatch) {
    const int64_t per_full = full.size / full.n_stream;
    const int64_t seqs_per_stream = full.n_stream == 1 ? full.n_seq_max : 1;
    const int64_t wanted = window.n_swa * seqs_per_stream + n_ubatch;
    const int64_t pad = KvCache::kWindowPad;
    return std::min(per_full, (wanted + pad - 1) / pad * pad);
}

KvCacheIswa::KvCacheIswa(const HParams &hp, const KvCacheParams &full,
                         std::vector<int64_t> swa_layers, const AttnWindow &window,
                         int64_t swa_per_stream) {
    KvCacheParams full_params = full;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        if (std::find(swa_layers.begin(), swa_layers.end(), il) == swa_layers.end()) {
            full_params.layers.push_back(il);
        }
    }
    KvCacheParams swa_params = full;
    swa_params.size = swa_per_stream * full.n_stream;
    swa_params.layers = std::move(swa_layers);
    swa_params.window = window;
    full_ = std::make_unique<KvCache>(hp, full_params);
    swa_ = std::make_unique<KvCache>(hp, swa_params);
}

std::vector<UbatchMemory> KvCacheIswa::plan(std::span<const Ubatch> ubatches) const {
    KvCells full_cells = full_->cells(), swa_cells = swa_->cells();
    std::vector<KvSlot> full = full_->plan_on(full_cells, ubatches);
    std::vector<KvSlot> swa = swa_->plan_on(swa_cells, ubatches);
    std::vector<UbatchMemory> plans;
    for (size_t i = 0; i < ubatches.size(); ++i) {
        plans.push_back({.slots = {std::move(full[i]), std::move(swa[i])}});
    }
    return plans;
}

void KvCacheIswa::apply(const Ubatch &u, const UbatchMemory &m) {
    full_->apply(u, m.slots.at(0));
    swa_->apply(u, m.slots.at(1));
}

void KvCacheIswa::clear() {
    full_->clear();
    swa_->clear();
}

void KvCacheIswa::seq_rm(SeqId seq, Pos p0, Pos p1) {
    full_->seq_rm(seq, p0, p1);
    swa_->seq_rm(seq, p0, p1);
}

void KvCacheIswa::seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) {
    full_->seq_cp(src, dst, p0, p1);
    swa_->seq_cp(src, dst, p0, p1);
}

void KvCacheIswa::seq_keep(SeqId seq) {
    full_->seq_keep(seq);
    swa_->seq_keep(seq);
}

void KvCacheIswa::seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) {
    full_->seq_add(seq, p0, p1, delta);
    swa_->seq_add(seq, p0, p1, delta);
}

void KvCacheIswa::seq_div(SeqId seq, Pos p0, Pos p1, int d) {
    full_->seq_div(seq, p0, p1, d);
    swa_->seq_div(seq, p0, p1, d);
}

Pos KvCacheIswa::seq_pos_min(SeqId seq) const {
    return std::max(full_->seq_pos_min(seq), swa_->seq_pos_min(seq));
}

bool KvCacheIswa::seq_can_resume(SeqId seq, Pos p) const {
    return full_->seq_can_resume(seq, p) && swa_->seq_can_resume(seq, p);
}

}  // namespace loom::engine
