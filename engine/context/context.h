#pragma once
// A model ready to decode: its memory of past tokens (KV caches), the backends and the scheduler
// that runs each graph over them, and the graph of the last ubatch (kept and reused while the
// next ubatch fits it).
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/context/batch.h"
#include "engine/graph/graph_result.h"
#include "engine/memory/kv_cache.h"
#include "engine/memory/memory.h"
#include "engine/model/model.h"
#include "loom/cpu.h"
#include "loom/sched.h"

namespace loom::engine {

struct ContextOptions {
    int64_t n_ctx = 4096;    // KV cells; 0: the model's training context
    int64_t n_batch = 2048;  // most tokens one decode() takes
    int64_t n_ubatch = 512;  // most tokens one graph computes
    int n_threads = 0;       // 0: one per core
    bool flash_attn = false;
    // The KV cache's types (llama.cpp's -ctk / -ctv): F32, F16, BF16 or a block format (Q8_0,
    // Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) in whole blocks per head; all but F32 and F16 need flash
    // attention, which reads them as stored.
    DType type_k = DType::F16;
    DType type_v = DType::F16;
    int n_seq_max = 1;  // sequence ids are 0 .. n_seq_max - 1
    // One KV region for all sequences (seq_cp between any two), or one stream per sequence
    // (n_ctx / n_seq_max cells each), which makes each sequence's results independent of the
    // others in the batch.
    bool kv_unified = true;
    // Sliding-window layers keep a cache as large as the others' rather than one the size of
    // their window (llama.cpp's --swa-full): more memory, and a cut-back sequence can always
    // resume without decoding its prompt again.
    bool swa_full = false;
    bool graph_reuse = true;
    // Pad ubatches to bucketed sizes (engine/context/ubatch_padding.h) so that more graphs are
    // reused; results are the same bit for bit either way. Off: on a CPU a prompt's compute
    // grows with its padded tokens far more than the graph builds it saves cost
    // (docs/PERFORMANCE.md, "Graph reuse for prompts").
    bool pad_ubatches = false;
    // Keep each output token's final hidden state (after the output norm, before the output
    // matrix: llama.cpp's per-token embeddings) for embeddings().
    bool embeddings = false;
    // Backends besides the context's own CPU backend, in priority order before it; the caller
    // keeps them alive while the context lives. The scheduler runs a node where the memory of
    // its weights is (the model's layer placement, ModelParams::layer_buffer_type), which is
    // also where the context keeps that layer's KV cache.
    std::vector<Backend *> backends;
};

// The smallest context that holds n tokens in whole attention windows (KvCache::kWindowPad
// cells): one sequence alone and in a batch then attend over the same number of cells.
int64_t whole_windows(int64_t n);

struct DecodeStats {
    int64_t graph_builds = 0;
    int64_t graph_reuses = 0;
    int64_t ubatches = 0;          // graphs computed (a batch may take several)
    double build_seconds = 0.0;    // building and allocating graphs, setting inputs
    double compute_seconds = 0.0;  // running them
};

class Context {
  public:
    Context(const Model &model, const ContextOptions &options);

    // Decodes every token of the batch; the logits of the tokens flagged in batch.logits are then
    // available through logits(). Throws loom::Error("[decode] ...") on a bad batch (token id out
    // of range, unknown sequence, more tokens than n_batch) or when the KV cache cannot hold it;
    // the cache is then left as before the call.
    void decode(const Batch &batch);

    // Logits of the i-th flagged token of the last batch (in batch order): n_vocab floats.
    std::span<const float> logits(int64_t i) const;
    int64_t n_outputs() const { return n_outputs_; }
    // The same token's final hidden state (n_embd floats); loom::Error("[decode] ...") unless
    // the context was made with ContextOptions::embeddings.
    std::span<const float> embeddings(int64_t i) const;
    // A reranker's classifier head (ModelWeights::cls, cls_out) on the same token's state:
    // n_scores() floats (its relevance score first); 0 scores where the model has no head.
    int64_t n_scores() const;
    std::span<const float> scores(int64_t i) const;

    // Sequence seq's memory as bytes: every cache's cells, positions, K and V (pending shifts
    // applied first).
    std::vector<std::byte> save_seq(SeqId seq);
    // Such bytes read and checked without changing anything: loom::Error("[state] <what>: ...")
    // for bytes of another model shape or KV type, or truncated ones.
    struct SavedSeq {
        std::vector<KvCache::SavedCells> caches;  // one per Memory cache
        Pos pos_max() const {
            Pos p = -1;
            for (const KvCache::SavedCells &c : caches) p = std::max(p, c.pos_max());
            return p;
        }
    };
    SavedSeq read_seq(std::span<const std::byte> bytes, std::string_view what) const;
    // Puts them in place of what sequence seq holds; loom::Error("[state] ...") when there is no
    // room for them (the sequence is then left empty).
    void place_seq(SeqId seq, const SavedSeq &saved, std::string_view what);

    const Model &model() const { return model_; }
    const ContextOptions &options() const { return options_; }
    // What the context remembers: sequence operations (seq_rm, seq_cp, ...), sizes.
    Memory &memory() { return *memory_; }
    const Memory &memory() const { return *memory_; }
    const DecodeStats &stats() const { return stats_; }
    // Sees every node the context's CPU backend computes, after it is computed
    // (CpuBackend::set_eval_callback).
    void set_eval_callback(CpuBackend::EvalCallback callback) {
        backend_.set_eval_callback(std::move(callback));
    }
    CpuBackend &backend() { return backend_; }
    // How the last graph was split over the backends.
    const SchedStats &sched_stats() const { return scheduler_.stats(); }

  private:
    void check(const Batch &batch) const;
    void decode_ubatch(const Ubatch &u, UbatchMemory slots);
    // The ubatch's output rows of `rows` (width floats each) into their places among the batch's.
    static void copy_outputs(const Ubatch &u, const Tensor &rows, int64_t width,
                             std::vector<float> &into);
    // Rotates cached K by the position shifts the sequence operations left.
    void apply_kv_shift();
    void rotate_k(const KvCache &kv, const std::vector<int32_t> &deltas);

    const Model &model_;
    ContextOptions options_;
    std::unique_ptr<Memory> memory_;
    CpuBackend backend_;
    Scheduler scheduler_;  // over options_.backends, then backend_
    std::unique_ptr<GraphResult> graph_;
    std::vector<float> logits_;
    std::vector<float> embeddings_;  // with ContextOptions::embeddings
    std::vector<float> scores_;      // n_scores() per output, with embeddings
    int64_t n_outputs_ = 0;
    DecodeStats stats_;
};

}  // namespace loom::engine
