#pragma once
// Interleaved sliding-window attention's memory (Gemma 2/3, gpt-oss, Cohere 2): the layers that
// attend over the whole context keep a full-size KV cache, the sliding-window layers a small one
// whose cells are reused once every sequence's window has left them. Per stream the small cache
// holds the window of each sequence sharing the stream plus one ubatch, so its memory is about
// window x SWA layers whatever the context's length.
#include <memory>

#include "engine/memory/kv_cache.h"

namespace loom::engine {

class KvCacheIswa : public Memory {
  public:
    // full: the full-attention cache's parameters; the window's cache takes the same types and
    // streams, the SWA layers and `window`, with swa_per_stream cells per stream.
    KvCacheIswa(const HParams &hp, const KvCacheParams &full, std::vector<int64_t> swa_layers,
                const AttnWindow &window, int64_t swa_per_stream);

    int n_caches() const override { return 2; }
    const KvCache &cache(int i) const override { return i == 0 ? *full_ : *swa_; }
    KvCache &cache(int i) override { return i == 0 ? *full_ : *swa_; }
    int cache_of_layer(int64_t il) const override { return swa_->holds_layer(il) ? 1 : 0; }
    std::vector<UbatchMemory> plan(std::span<const Ubatch> ubatches) const override;
    void apply(const Ubatch &u, const UbatchMemory &m) override;
    void clear() override;
    void seq_rm(SeqId seq, Pos p0, Pos p1) override;
    void seq_cp(SeqId src, SeqId dst, Pos p0, Pos p1) override;
    void seq_keep(SeqId seq) override;
    void seq_add(SeqId seq, Pos p0, Pos p1, Pos delta) override;
    void seq_div(SeqId seq, Pos p0, Pos p1, int d) override;
    Pos seq_pos_max(SeqId seq) const override { return full_->seq_pos_max(seq); }
    Pos seq_pos_min(SeqId seq) const override;
    bool seq_can_resume(SeqId seq, Pos p) const override;
    int64_t size() const override { return full_->size(); }
    int64_t used() const override { return full_->used(); }
    size_t memory_bytes() const override { return full_->memory_bytes() + swa_->memory_bytes(); }

    // Cells per stream of the window's cache: a window for each sequence the stream holds and a
    // ubatch, rounded up to KvCache::kWindowPad, at most the full cache's.
    static int64_t swa_cells_per_stream(const KvCacheParams &full, const AttnWindow &window,
                                        int64_t n_ubatch);

  private:
    std::unique_ptr<KvCache> full_, swa_;
};

}  // namespace loom::engine
