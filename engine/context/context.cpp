#include "engine/context/context.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/context/ubatch_padding.h"
#include "engine/graph/graph_context.h"
#include "engine/model/rope.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

// Arena for one graph's tensor records: a few hundred bytes per node.
constexpr size_t kGraphArenaBytes = kGraphNodes * 1024;

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

KvCacheParams kv_params(const Model &model, const ContextOptions &o) {
    if (o.kv_type != DType::F32 && o.kv_type != DType::F16) {
        fail("context", "KV cache type {} is not supported (f32 or f16)", dtype_name(o.kv_type));
    }
    const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : model.hparams().n_ctx_train;
    // The naive attention multiplies V transposed; flash attention reads it as stored.
    if (o.n_seq_max <= 0) fail("context", "n_seq_max {} must be positive", o.n_seq_max);
    const int n_stream = o.kv_unified ? 1 : o.n_seq_max;
    if (n_ctx % n_stream != 0) {
        fail("context", "n_ctx {} is not a multiple of n_seq_max {} (one KV stream per sequence)",
             n_ctx, n_stream);
    }
    return {.size = n_ctx,
            .type_k = o.kv_type,
            .type_v = o.kv_type,
            .v_trans = !o.flash_attn,
            .k_only = model.hparams().is_mla,
            .n_stream = n_stream,
            .n_seq_max = o.n_seq_max};
}

}  // namespace

Context::Context(const Model &model, const ContextOptions &options)
    : model_(model),
      options_(options),
      kv_(model.hparams(), kv_params(model, options)),
      backend_(options.n_threads),
      allocator_(host_buffer_type()) {
    options_.n_ctx = kv_.size();
    if (options_.n_ubatch <= 0 || options_.n_batch <= 0 || options_.n_seq_max <= 0) {
        fail("context", "n_batch {}, n_ubatch {} and n_seq_max {} must be positive",
             options_.n_batch, options_.n_ubatch, options_.n_seq_max);
    }
    options_.n_ubatch = std::min(options_.n_ubatch, options_.n_batch);
}

void Context::check(const Batch &batch) const {
    const int64_t n = batch.size();
    const int64_t n_embd = model_.hparams().n_embd, n_vocab = model_.hparams().n_vocab;
    if (n == 0) fail("decode", "the batch is empty");
    if (n > options_.n_batch) {
        fail("decode", "the batch has {} tokens, more than n_batch = {}", n, options_.n_batch);
    }
    const bool sizes_ok =
        int64_t(batch.seq_id.size()) == n && int64_t(batch.logits.size()) == n &&
        (batch.tokens.empty() || int64_t(batch.tokens.size()) == n) &&
        (batch.embd.empty() ? !batch.tokens.empty() : int64_t(batch.embd.size()) == n * n_embd);
    if (!sizes_ok) fail("decode", "the batch's arrays have different lengths");
    for (int64_t i = 0; i < n; ++i) {
        const bool embedding_row =
            !batch.embd.empty() && (batch.tokens.empty() || batch.tokens[size_t(i)] == kEmbdToken);
        if (!batch.tokens.empty() && !embedding_row &&
            (batch.tokens[size_t(i)] < 0 || batch.tokens[size_t(i)] >= n_vocab)) {
            fail("decode", "token {} at batch index {} is outside the vocabulary (0..{})",
                 batch.tokens[size_t(i)], i, n_vocab - 1);
        }
        if (batch.seq_id[size_t(i)] < 0 || batch.seq_id[size_t(i)] >= options_.n_seq_max) {
            fail("decode", "sequence id {} at batch index {} is outside 0..{}",
                 batch.seq_id[size_t(i)], i, options_.n_seq_max - 1);
        }
        if (batch.pos[size_t(i)] < 0) {
            fail("decode", "position {} at batch index {} is negative", batch.pos[size_t(i)], i);
        }
        if (model_.arch().positions == PositionEncoding::learned &&
            batch.pos[size_t(i)] >= model_.hparams().n_ctx_train) {
            fail("decode",
                 "position {} at batch index {} is past the model's {} learned positions (its "
                 "training context)",
                 batch.pos[size_t(i)], i, model_.hparams().n_ctx_train);
        }
    }
    // A sequence's tokens follow on from what the cache holds of it, one position at a time, as
    // llama.cpp requires: a gap or a repeat is a caller's mistake that would attend wrongly. A
    // sequence with nothing cached may start anywhere.
    std::vector<Pos> next(size_t(options_.n_seq_max), -1);
    for (int64_t i = 0; i < n; ++i) {
        const SeqId seq = batch.seq_id[size_t(i)];
        Pos &expected = next[size_t(seq)];
        if (expected < 0) {
            const Pos last = kv_.seq_pos_max(seq);
            expected = last < 0 ? batch.pos[size_t(i)] : last + 1;
        }
        if (batch.pos[size_t(i)] != expected) {
            fail("decode",
                 "sequence {} has position {} at batch index {} where {} comes next (its last "
                 "cached position is {})",
                 seq, batch.pos[size_t(i)], i, expected, kv_.seq_pos_max(seq));
        }
        ++expected;
    }
    // Every stream must hold its tokens, checked before any ubatch runs so that a batch that
    // does not fit leaves the cache as it was.
    std::vector<int64_t> wanted(size_t(kv_.n_stream()), 0);
    for (const SeqId seq : batch.seq_id) ++wanted[size_t(seq % kv_.n_stream())];
    for (int stream = 0; stream < kv_.n_stream(); ++stream) {
        const int64_t free = kv_.free_cells(stream), cells = kv_.size() / kv_.n_stream();
        if (wanted[size_t(stream)] > free) {
            fail("decode",
                 "the context cannot take {} more tokens: {} of its {} cells are in use (raise "
                 "--ctx-size)",
                 wanted[size_t(stream)], cells - free, cells);
        }
    }
}

void Context::decode(const Batch &batch) {
    check(batch);
    if (kv_.has_shift()) apply_kv_shift();
    n_outputs_ = std::count(batch.logits.begin(), batch.logits.end(), uint8_t(1));
    logits_.assign(size_t(n_outputs_ * model_.hparams().n_vocab), 0.0f);
    for (const Ubatch &u :
         split_batch(batch, options_.n_ubatch, model_.hparams().n_embd, kv_.n_stream())) {
        decode_ubatch(u);
    }
}

void Context::decode_ubatch(const Ubatch &u_in) {
    Ubatch u = u_in;
    // A graph needs at least one output row; a ubatch without one computes its last token's
    // logits and drops them.
    const bool discard = u.output_rows.empty();
    if (discard) {
        u.output_rows.push_back(int32_t(u.n_tokens() - 1));
        u.output_ids.push_back(-1);
    }
    if (!kv_.find_slot(u)) {
        fail("decode", "the KV cache is full ({} cells)", kv_.size());
    }
    const int64_t n_kv = kv_.n_kv(u);
    if (options_.pad_ubatches) {
        kv_.repeat_slot(
            pad_ubatch(u, model_.hparams().n_embd, options_.n_ubatch / std::max(1, u.n_stream)));
    }
    const auto start = std::chrono::steady_clock::now();
    GraphParams params{.model = &model_,
                       .kv = &kv_,
                       .cparams = {.n_ctx = kv_.size(),
                                   .n_ctx_seq = kv_.cells_per_stream(),
                                   .flash_attn = options_.flash_attn},
                       .ubatch = u,
                       .n_outputs = u.n_outputs(),
                       .n_kv = n_kv};
    if (options_.graph_reuse && graph_ != nullptr && graph_->can_reuse(params)) {
        ++stats_.graph_reuses;
    } else {
        graph_ = std::make_unique<GraphResult>(kGraphArenaBytes);
        GraphContext g(params, *graph_);
        model_.arch().build_graph(g);
        allocator_.allocate(*graph_->graph());
        ++stats_.graph_builds;
    }
    graph_->set_params(params);
    graph_->set_inputs(graph_->params());
    stats_.build_seconds += seconds_since(start);

    const auto compute_start = std::chrono::steady_clock::now();
    backend_.graph_compute(*graph_->graph());
    stats_.compute_seconds += seconds_since(compute_start);

    if (discard) return;
    const int64_t n_vocab = model_.hparams().n_vocab;
    const auto *out = static_cast<const float *>(graph_->logits->data);
    for (int64_t r = 0; r < u.n_outputs(); ++r) {  // into the batch's order of outputs
        std::memcpy(logits_.data() + u.output_ids[size_t(r)] * n_vocab, out + r * n_vocab,
                    size_t(n_vocab) * sizeof(float));
    }
}

std::span<const float> Context::logits(int64_t i) const {
    if (i < 0 || i >= n_outputs_) {
        fail("decode", "logits of output {} requested, the last batch had {}", i, n_outputs_);
    }
    const int64_t n_vocab = model_.hparams().n_vocab;
    return {logits_.data() + i * n_vocab, size_t(n_vocab)};
}

void Context::apply_kv_shift() {
    const std::vector<int32_t> deltas = kv_.take_shift();
    if (model_.arch().positions != PositionEncoding::rope) return;
    const HParams &hp = model_.hparams();
    // Four nodes per layer: a graph of 8 * n_layer nodes has room, each record under 1 KiB.
    const size_t n_nodes = size_t(8 * hp.n_layer + 16);
    loom::Context ctx({.mem_size = n_nodes * 1024 + n_nodes * 64, .no_alloc = true});
    Graph *graph = new_graph(ctx, n_nodes);
    Tensor *pos = set_input(ctx.new_tensor(DType::I32, {kv_.size()}));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        Tensor *k = kv_.k(il);
        const size_t elt = traits(k->type).type_size;
        // The rotary dims of each head, [n_rot, n_head_kv, cells]: rope rotates each cell by its
        // own position delta, and rotations by angles add, so this turns K at the old position
        // into K at the new one.
        Tensor *heads =
            view_3d(ctx, k, hp.n_rot, hp.n_head_kv, kv_.size(), size_t(hp.n_embd_head_k) * elt,
                    k->nb[1], size_t(hp.k_rope_offset()) * elt);
        Tensor *rotated =
            rope_ext(ctx, cast(ctx, heads, DType::F32), pos, rope_shift_params(model_),
                     rope_factors(model_, kv_.cells_per_stream()));
        build_forward_expand(graph, cpy(ctx, rotated, heads));
    }
    // Its plan may grow the allocator's buffer, which the kept graph's tensors point into.
    graph_.reset();
    allocator_.allocate(*graph);
    std::memcpy(pos->data, deltas.data(), deltas.size() * sizeof(int32_t));
    backend_.graph_compute(*graph);
}

}  // namespace loom::engine
