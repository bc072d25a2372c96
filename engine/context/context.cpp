#include "engine/context/context.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>

#include "engine/context/stream_gaps.h"
#include "engine/context/ubatch_padding.h"
#include "engine/graph/graph_context.h"
#include "engine/memory/kv_cache_iswa.h"
#include "engine/memory/state_io.h"
#include "engine/model/rope.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

// Arena for one graph's tensor records: a few hundred bytes per node.
constexpr size_t kGraphArenaBytes = kGraphNodes * 1024;

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Each layer's K and V live where its weights are, with the backend that runs the layer.
std::vector<BufferType *> layer_buffer_types(const Model &model) {
    std::vector<BufferType *> types;
    for (int64_t il = 0; il < model.hparams().n_layer; ++il) {
        types.push_back(model.layer_buffer_type(il));
    }
    return types;
}

// The types a KV cache may hold, as llama.cpp allows them.
constexpr DType kKvTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,  DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL};

void check_kv_type(const char *which, DType type, int64_t head_size, bool flash_attn) {
    if (std::find(std::begin(kKvTypes), std::end(kKvTypes), type) == std::end(kKvTypes)) {
        std::string names;
        for (const DType t : kKvTypes)
            names += fmt::format("{}{}", names.empty() ? "" : ", ", dtype_name(t));
        fail("context", "{} cache type {} is not supported ({})", which, dtype_name(type), names);
    }
    if (type != DType::F32 && type != DType::F16 && !flash_attn) {
        fail("context", "a {} cache of type {} needs flash attention (--flash-attn on)", which,
             dtype_name(type));
    }
    if (head_size % traits(type).block_size != 0) {
        fail("context", "{} cache type {}: the head size {} is not a multiple of its block of {}",
             which, dtype_name(type), head_size, traits(type).block_size);
    }
}

KvCacheParams kv_params(const Model &model, const ContextOptions &o) {
    const HParams &hp = model.hparams();
    check_kv_type("K", o.type_k, hp.n_embd_head_k, o.flash_attn);
    // Latent attention reads V out of K's rows: it has no V cache of its own.
    if (!hp.is_mla) check_kv_type("V", o.type_v, hp.n_embd_head_v, o.flash_attn);
    const int64_t n_ctx = o.n_ctx > 0 ? o.n_ctx : model.hparams().n_ctx_train;
    if (o.n_seq_max <= 0) fail("context", "n_seq_max {} must be positive", o.n_seq_max);
    const int n_stream = o.kv_unified ? 1 : o.n_seq_max;
    if (n_ctx % n_stream != 0) {
        fail("context", "n_ctx {} is not a multiple of n_seq_max {} (one KV stream per sequence)",
             n_ctx, n_stream);
    }
    return {.size = n_ctx,
            .type_k = o.type_k,
            .type_v = o.type_v,
            // The naive attention multiplies V transposed; flash attention reads it as stored.
            .v_trans = !o.flash_attn,
            .k_only = model.hparams().is_mla,
            .n_stream = n_stream,
            .n_seq_max = o.n_seq_max,
            // Tokens that see their whole sequence attend within their ubatch (a batch is
            // computed as one): nothing is read back from a cache.
            .cells_only = !model.hparams().causal_attn,
            .alibi = model.hparams().f_max_alibi_bias > 0.0f,
            .buffer_types = layer_buffer_types(model)};
}

// One KV cache for every layer, or, where some layers attend through a sliding window and others
// over everything, a small cache for the window's layers beside the full one (KvCacheIswa).
std::unique_ptr<Memory> make_memory(const Model &model, const ContextOptions &o) {
    const HParams &hp = model.hparams();
    KvCacheParams params = kv_params(model, o);
    std::vector<int64_t> swa_layers;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        if (hp.is_swa(il)) swa_layers.push_back(il);
    }
    if (swa_layers.empty()) return std::make_unique<KvCache>(hp, params);
    if (int64_t(swa_layers.size()) == hp.n_layer) {  // all through the window: one cache
        params.window = hp.swa;
        return std::make_unique<KvCache>(hp, params);
    }
    const int64_t swa_per_stream =
        o.swa_full ? params.size / params.n_stream
                   : KvCacheIswa::swa_cells_per_stream(params, hp.swa, o.n_ubatch);
    return std::make_unique<KvCacheIswa>(hp, params, std::move(swa_layers), hp.swa, swa_per_stream);
}

ContextOptions checked(ContextOptions o) {
    if (o.n_ubatch <= 0 || o.n_batch <= 0 || o.n_seq_max <= 0) {
        fail("context", "n_batch {}, n_ubatch {} and n_seq_max {} must be positive", o.n_batch,
             o.n_ubatch, o.n_seq_max);
    }
    o.n_ubatch = std::min(o.n_ubatch, o.n_batch);
    return o;
}

std::vector<Backend *> with_cpu(std::vector<Backend *> backends, CpuBackend &cpu) {
    backends.push_back(&cpu);
    return backends;
}

}  // namespace

int64_t whole_windows(int64_t n) {
    const int64_t window = KvCache::kWindowPad;
    return std::max<int64_t>(1, (n + window - 1) / window) * window;
}

Context::Context(const Model &model, const ContextOptions &options)
    : model_(model),
      options_(checked(options)),
      memory_(make_memory(model, options_)),
      backend_(options.n_threads),
      scheduler_(with_cpu(options_.backends, backend_)) {
    options_.n_ctx = memory_->size();
    // An encoder's outputs are its embeddings: it has nothing else to give.
    if (!model.arch().lm_head) options_.embeddings = true;
    // Where each token sees its whole sequence (attending among the ubatch's tokens, nothing
    // cached), a sequence must not be split: a batch is computed as one ubatch.
    if (!model.hparams().causal_attn) options_.n_ubatch = options_.n_batch;
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
            const Pos last = memory_->seq_pos_max(seq);
            expected = last < 0 ? batch.pos[size_t(i)] : last + 1;
        }
        if (batch.pos[size_t(i)] != expected) {
            fail("decode",
                 "sequence {} has position {} at batch index {} where {} comes next (its last "
                 "cached position is {})",
                 seq, batch.pos[size_t(i)], i, expected, memory_->seq_pos_max(seq));
        }
        ++expected;
    }
}

void Context::decode(const Batch &batch) {
    check(batch);
    const int n_stream = memory_->cache(0).n_stream();
    const int64_t n_embd = model_.hparams().n_embd;
    // Every ubatch gets its cells before any runs, so that a batch that does not fit leaves the
    // memory as it was. Idle streams between busy ones get fillers where they have room, so
    // that one ubatch covers the run (engine/context/stream_gaps.h).
    const Pos max_pos = model_.arch().positions == PositionEncoding::learned
                            ? Pos(model_.hparams().n_ctx_train)
                            : std::numeric_limits<Pos>::max();
    std::optional<StreamGapFill> fill = fill_stream_gaps(batch, *memory_, n_stream, max_pos);
    std::vector<Ubatch> ubatches;
    std::vector<UbatchMemory> slots;
    if (fill) {
        ubatches = split_batch(fill->batch, options_.n_ubatch, n_embd, n_stream);
        try {
            slots = memory_->plan(ubatches);
        } catch (const Error &) {  // an idle sequence's stream is full: the runs go apart
            fill.reset();
        }
    }
    if (!fill) {
        ubatches = split_batch(batch, options_.n_ubatch, n_embd, n_stream);
        slots = memory_->plan(ubatches);
    }
    // The fillers leave the memory however the decode ends.
    struct RemoveFillers {
        Memory &memory;
        const std::optional<StreamGapFill> &fill;
        ~RemoveFillers() {
            if (!fill) return;
            for (const auto &[seq, pos] : fill->fillers) memory.seq_rm(seq, pos, -1);
        }
    } remove_fillers{*memory_, fill};
    stats_.ubatches += int64_t(ubatches.size());
    apply_kv_shift();
    n_outputs_ = std::count(batch.logits.begin(), batch.logits.end(), uint8_t(1));
    if (model_.arch().lm_head) logits_.assign(size_t(n_outputs_ * model_.hparams().n_vocab), 0.0f);
    if (options_.embeddings) {
        embeddings_.assign(size_t(n_outputs_ * model_.hparams().n_embd), 0.0f);
        scores_.assign(size_t(n_outputs_ * n_scores()), 0.0f);
    }
    for (size_t i = 0; i < ubatches.size(); ++i) decode_ubatch(ubatches[i], std::move(slots[i]));
}

void Context::decode_ubatch(const Ubatch &u_in, UbatchMemory slots) {
    // No weight moves while this graph is built and computed (Model::weights_in_use).
    const auto weights = model_.weights_in_use();
    Ubatch u = u_in;
    // A graph needs at least one output row; a ubatch without one computes its last token's
    // logits and drops them.
    const bool discard = u.output_rows.empty();
    if (discard) {
        u.output_rows.push_back(int32_t(u.n_tokens() - 1));
        u.output_ids.push_back(-1);
    }
    memory_->apply(u, slots);
    if (options_.pad_ubatches) {
        slots.repeat(
            pad_ubatch(u, model_.hparams().n_embd, options_.n_ubatch / std::max(1, u.n_stream)));
    }
    const auto start = std::chrono::steady_clock::now();
    GraphParams params{.model = &model_,
                       .memory = memory_.get(),
                       .cparams = {.n_ctx_seq = memory_->cache(0).cells_per_stream(),
                                   .flash_attn = options_.flash_attn,
                                   .causal = model_.hparams().causal_attn,
                                   .embeddings = options_.embeddings},
                       .ubatch = u,
                       .slots = std::move(slots),
                       .n_outputs = u.n_outputs()};
    if (options_.graph_reuse && graph_ != nullptr && graph_->can_reuse(params)) {
        ++stats_.graph_reuses;
    } else {
        graph_ = std::make_unique<GraphResult>(kGraphArenaBytes);
        GraphContext g(params, *graph_);
        model_.arch().build_graph(g);
        scheduler_.allocate(*graph_->graph());
        ++stats_.graph_builds;
    }
    graph_->set_inputs(std::move(params));
    stats_.build_seconds += seconds_since(start);

    const auto compute_start = std::chrono::steady_clock::now();
    scheduler_.compute(*graph_->graph());
    stats_.compute_seconds += seconds_since(compute_start);

    if (discard) return;
    if (graph_->logits != nullptr)
        copy_outputs(u, *graph_->logits, model_.hparams().n_vocab, logits_);
    if (options_.embeddings) copy_outputs(u, *graph_->embd, model_.hparams().n_embd, embeddings_);
    if (graph_->scores != nullptr) copy_outputs(u, *graph_->scores, n_scores(), scores_);
}

void Context::copy_outputs(const Ubatch &u, const Tensor &rows, int64_t width,
                           std::vector<float> &into) {
    const auto *out = static_cast<const float *>(rows.data);
    for (int64_t r = 0; r < u.n_outputs(); ++r) {  // into the batch's order of outputs
        std::memcpy(into.data() + u.output_ids[size_t(r)] * width, out + r * width,
                    size_t(width) * sizeof(float));
    }
}

std::span<const float> Context::logits(int64_t i) const {
    if (!model_.arch().lm_head) {
        fail("decode", "{} is an encoder: it gives embeddings, not logits", model_.hparams().arch);
    }
    if (i < 0 || i >= n_outputs_) {
        fail("decode", "logits of output {} requested, the last batch had {}", i, n_outputs_);
    }
    const int64_t n_vocab = model_.hparams().n_vocab;
    return {logits_.data() + i * n_vocab, size_t(n_vocab)};
}

std::span<const float> Context::embeddings(int64_t i) const {
    if (!options_.embeddings)
        fail("decode", "embeddings requested from a context made without them");
    if (i < 0 || i >= n_outputs_) {
        fail("decode", "embeddings of output {} requested, the last batch had {}", i, n_outputs_);
    }
    const int64_t n_embd = model_.hparams().n_embd;
    return {embeddings_.data() + i * n_embd, size_t(n_embd)};
}

int64_t Context::n_scores() const {
    const ModelWeights &w = model_.weights();
    return w.cls_out != nullptr ? w.cls_out->ne[1] : w.cls != nullptr ? w.cls->ne[1] : 0;
}

std::span<const float> Context::scores(int64_t i) const {
    const int64_t n = n_scores();
    if (n == 0) fail("decode", "{} has no classifier head to score with", model_.hparams().arch);
    (void)embeddings(i);  // the same checks: a context with embeddings, an output of the batch
    return {scores_.data() + i * n, size_t(n)};
}

std::vector<std::byte> Context::save_seq(SeqId seq) {
    apply_kv_shift();
    StateWriter out;
    out.put(uint32_t(memory_->n_caches()));
    for (int i = 0; i < memory_->n_caches(); ++i) memory_->cache(i).write_seq(seq, out);
    return out.take();
}

Context::SavedSeq Context::read_seq(std::span<const std::byte> bytes, std::string_view what) const {
    // Every cache's cells are read and checked before any cache changes.
    StateReader in(bytes, what);
    const auto n_caches = in.get<uint32_t>();
    if (int64_t(n_caches) != memory_->n_caches()) {
        fail("state", "{}: {} KV caches saved, this context has {} (another model)", what, n_caches,
             memory_->n_caches());
    }
    SavedSeq saved;
    for (int i = 0; i < memory_->n_caches(); ++i) {
        saved.caches.push_back(memory_->cache(i).read_saved(in));
    }
    if (!in.at_end()) {
        fail("state", "{}: {} bytes after the sequence's state", what, bytes.size() - in.offset());
    }
    return saved;
}

void Context::place_seq(SeqId seq, const SavedSeq &saved, std::string_view what) {
    if (seq < 0 || seq >= options_.n_seq_max) {
        fail("state", "sequence id {} is outside 0..{}", seq, options_.n_seq_max - 1);
    }
    if (std::ssize(saved.caches) != memory_->n_caches()) {
        fail("state", "{}: {} KV caches saved, this context has {}", what, saved.caches.size(),
             memory_->n_caches());
    }
    apply_kv_shift();
    try {
        for (int i = 0; i < memory_->n_caches(); ++i) {
            memory_->cache(i).place_saved(seq, saved.caches[size_t(i)], what);
        }
    } catch (...) {
        memory_->seq_rm(seq, 0, -1);
        throw;
    }
}

void Context::apply_kv_shift() {
    for (int i = 0; i < memory_->n_caches(); ++i) {
        KvCache &kv = memory_->cache(i);
        if (!kv.has_shift()) continue;
        const std::vector<int32_t> deltas = kv.take_shift();
        if (model_.arch().positions == PositionEncoding::rope) rotate_k(kv, deltas);
    }
}

void Context::rotate_k(const KvCache &kv, const std::vector<int32_t> &deltas) {
    const HParams &hp = model_.hparams();
    std::vector<int64_t> layers;  // those whose K holds a rotation
    for (const int64_t il : kv.layers()) {
        if (hp.has_rope(il)) layers.push_back(il);
    }
    if (layers.empty()) return;  // the graph would not even read the deltas
    // Four nodes per layer: a graph of 8 * n_layers nodes has room, each record under 1 KiB.
    const size_t n_nodes = 8 * layers.size() + 16;
    loom::Context ctx({.mem_size = n_nodes * 1024 + n_nodes * 64, .no_alloc = true});
    Graph *graph = new_graph(ctx, n_nodes);
    Tensor *pos = set_input(ctx.new_tensor(DType::I32, {kv.size()}));
    Tensor *factors = rope_factors(model_, memory_->cache(0).cells_per_stream());
    for (const int64_t il : layers) {
        Tensor *k = kv.k(il);
        const size_t head_bytes = row_size(k->type, hp.n_embd_head_k);
        // Rope rotates each cell by its own position delta, and rotations by angles add, so
        // this turns K at the old position into K at the new one.
        if (traits(k->type).is_quantized && hp.k_rope_offset() == 0) {
            // Whole heads [head_dim, n_head_kv, cells] as floats (the rotary dims first, so
            // rope with n_rot dims leaves the rest), out of the cache's Hadamard rotation when
            // it has one and back into it before they are rounded again.
            Tensor *heads =
                view_3d(ctx, k, hp.n_embd_head_k, hp.n_head_kv, kv.size(), head_bytes, k->nb[1], 0);
            Tensor *x = cast(ctx, heads, DType::F32);
            if (kv.k_rotation() != 0) x = hadamard(ctx, x, kv.k_rotation());
            x = rope_ext(ctx, x, pos, rope_shift_params(model_, il), factors);
            if (kv.k_rotation() != 0) x = hadamard(ctx, x, kv.k_rotation());
            build_forward_expand(graph, cpy(ctx, x, heads));
            continue;
        }
        // The rotary dims of each head, [n_rot, n_head_kv, cells] (of a block format: whole
        // blocks, as latent attention's 64 after 512 are).
        if (hp.n_rot % traits(k->type).block_size != 0 ||
            hp.k_rope_offset() % traits(k->type).block_size != 0) {
            fail("kv", "cannot shift a {} K cache whose rotary dims are not whole blocks",
                 dtype_name(k->type));
        }
        Tensor *heads = view_3d(ctx, k, hp.n_rot, hp.n_head_kv, kv.size(), head_bytes, k->nb[1],
                                row_size(k->type, hp.k_rope_offset()));
        Tensor *rotated = rope_ext(ctx, cast(ctx, heads, DType::F32), pos,
                                   rope_shift_params(model_, il), factors);
        build_forward_expand(graph, cpy(ctx, rotated, heads));
    }
    // Its plan may grow the allocator's buffers, which the kept graph's tensors point into.
    graph_.reset();
    scheduler_.allocate(*graph);
    std::memcpy(pos->data, deltas.data(), deltas.size() * sizeof(int32_t));
    scheduler_.compute(*graph);
}

}  // namespace loom::engine
