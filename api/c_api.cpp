// include/loom/loom.h over the engine: every entry point catches what the engine throws and
// turns it into the return value the header promises plus a message for loom_last_error().
#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_formatter.h"
#include "engine/context/context.h"
#include "engine/context/sequence_state.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "loom/error.h"
#include "loom/loom.h"

using loom::DType;
using loom::fail;
using namespace loom::engine;

struct loom_model {
    std::unique_ptr<Model> model;
    std::string arch;  // NUL-terminated for loom_model_arch
};

struct loom_context {
    const loom_model *owner;
    Context ctx;
};

struct loom_sampler {
    Sampler sampler;
};

namespace {

thread_local std::string last_error;

// Runs f; on an exception records its message and returns `failed`.
template <typename T, typename F>
T guarded(T failed, F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        last_error = "out of memory";
    } catch (const std::exception &e) {
        last_error = e.what();
    } catch (...) {
        last_error = "unknown error";
    }
    return failed;
}

void require(const void *p, const char *what) {
    if (p == nullptr) fail("api", "{} is NULL", what);
}

// Output i, or counted from the end when negative, as an index into the last batch's outputs.
int64_t output_index(const Context &ctx, int32_t i) {
    const int64_t n = ctx.n_outputs();
    return i < 0 ? n + i : i;
}

// Copies `text` into buf when it fits in `length`; returns its length, or minus it when not.
int32_t copy_out(const std::string &text, char *buf, int32_t length) {
    if (text.size() > size_t(std::numeric_limits<int32_t>::max())) fail("api", "text too long");
    const auto n = int32_t(text.size());
    if (n > length) return -n;
    if (n > 0) {
        require(buf, "buf");
        std::memcpy(buf, text.data(), size_t(n));
    }
    return n;
}

// The context checks which types a KV cache may hold; this only reads the name.
DType kv_type_from_name(const char *name) {
    if (name == nullptr) return DType::F16;
    const std::optional<DType> type = loom::dtype_from_name(name);
    if (!type) fail("api", "KV type \"{}\" is not a type (f16, f32, q8_0, ...)", name);
    return *type;
}

}  // namespace

extern "C" {

int32_t loom_abi_version(void) {
    return LOOM_ABI_VERSION;
}

const char *loom_last_error(void) {
    return last_error.c_str();
}

struct loom_model_params loom_model_default_params(void) {
    const ModelParams defaults;
    return {.repack = defaults.repack, .progress = false};
}

loom_model *loom_model_load(const char *path, struct loom_model_params params) {
    return guarded<loom_model *>(nullptr, [&] {
        require(path, "path");
        auto model = Model::load(path, {.repack = params.repack, .progress = params.progress});
        std::string arch(model->arch().name);
        return new loom_model{std::move(model), std::move(arch)};
    });
}

void loom_model_free(loom_model *model) {
    delete model;
}

const char *loom_model_arch(const loom_model *model) {
    return model->arch.c_str();
}
int32_t loom_model_n_vocab(const loom_model *model) {
    return int32_t(model->model->hparams().n_vocab);
}
int32_t loom_model_n_embd(const loom_model *model) {
    return int32_t(model->model->hparams().n_embd);
}
int32_t loom_model_n_layer(const loom_model *model) {
    return int32_t(model->model->hparams().n_layer);
}
int32_t loom_model_n_ctx_train(const loom_model *model) {
    return int32_t(model->model->hparams().n_ctx_train);
}
uint64_t loom_model_n_params(const loom_model *model) {
    return model->model->n_params();
}
uint64_t loom_model_size(const loom_model *model) {
    return model->model->size_bytes();
}

struct loom_context_params loom_context_default_params(void) {
    const ContextOptions d;
    return {.n_ctx = uint32_t(d.n_ctx),
            .n_batch = uint32_t(d.n_batch),
            .n_ubatch = uint32_t(d.n_ubatch),
            .n_seq_max = uint32_t(d.n_seq_max),
            .n_threads = d.n_threads,
            .flash_attn = d.flash_attn,
            .kv_unified = d.kv_unified,
            .embeddings = d.embeddings,
            .type_k = nullptr,
            .type_v = nullptr};
}

loom_context *loom_context_new(const loom_model *model, struct loom_context_params p) {
    return guarded<loom_context *>(nullptr, [&] {
        require(model, "model");
        const uint32_t n_ctx =
            p.n_ctx == 0 ? uint32_t(model->model->hparams().n_ctx_train) : p.n_ctx;
        const ContextOptions options{.n_ctx = n_ctx,
                                     .n_batch = p.n_batch,
                                     .n_ubatch = std::min(p.n_ubatch, p.n_batch),
                                     .n_threads = p.n_threads,
                                     .flash_attn = p.flash_attn,
                                     .type_k = kv_type_from_name(p.type_k),
                                     .type_v = kv_type_from_name(p.type_v),
                                     .n_seq_max = int(p.n_seq_max),
                                     .kv_unified = p.kv_unified,
                                     .embeddings = p.embeddings};
        return new loom_context{model, Context(*model->model, options)};
    });
}

void loom_context_free(loom_context *ctx) {
    delete ctx;
}

uint32_t loom_n_ctx(const loom_context *ctx) {
    return uint32_t(ctx->ctx.memory().size());
}

const loom_model *loom_context_model(const loom_context *ctx) {
    return ctx->owner;
}

struct loom_batch loom_batch_get_one(const loom_token *tokens, int32_t n_tokens) {
    return {.n_tokens = n_tokens, .token = tokens};
}

int32_t loom_decode(loom_context *c, struct loom_batch b) {
    return guarded<int32_t>(-1, [&] {
        require(c, "ctx");
        if (b.n_tokens <= 0) fail("decode", "a batch of {} tokens", b.n_tokens);
        if (b.token == nullptr && b.embd == nullptr)
            fail("decode", "a batch with neither tokens nor embeddings");
        const int64_t n_embd = c->ctx.model().hparams().n_embd;
        Batch batch;
        // Positions not given follow each sequence's last one, in batch order.
        std::vector<Pos> next(size_t(c->ctx.options().n_seq_max), -1);
        for (int32_t i = 0; i < b.n_tokens; ++i) {
            const SeqId seq = b.seq_id != nullptr ? b.seq_id[i] : 0;
            Pos pos = 0;
            if (b.pos != nullptr) {
                pos = b.pos[i];
            } else {
                if (seq < 0 || size_t(seq) >= next.size()) {
                    fail("decode", "token {}: sequence id {} is outside 0..{}", i, seq,
                         next.size() - 1);
                }
                Pos &n = next[size_t(seq)];
                if (n < 0) n = c->ctx.memory().seq_pos_max(seq) + 1;
                pos = n++;
            }
            const bool out = b.logits != nullptr ? b.logits[i] != 0 : i == b.n_tokens - 1;
            if (b.token != nullptr) {
                batch.add(b.token[i], pos, seq, out);
            } else {
                batch.add_embd({b.embd + int64_t(i) * n_embd, size_t(n_embd)}, pos, seq, out);
            }
        }
        c->ctx.decode(batch);
        return 0;
    });
}

int32_t loom_n_outputs(const loom_context *ctx) {
    return int32_t(ctx->ctx.n_outputs());
}

const float *loom_get_logits_ith(loom_context *c, int32_t i) {
    return guarded<const float *>(nullptr,
                                  [&] { return c->ctx.logits(output_index(c->ctx, i)).data(); });
}

const float *loom_get_embeddings_ith(loom_context *c, int32_t i) {
    return guarded<const float *>(
        nullptr, [&] { return c->ctx.embeddings(output_index(c->ctx, i)).data(); });
}

int32_t loom_tokenize(const loom_model *model, const char *text, int32_t text_len,
                      loom_token *tokens, int32_t n_tokens_max, bool add_special,
                      bool parse_special) {
    return guarded<int32_t>(std::numeric_limits<int32_t>::min(), [&] {
        require(model, "model");
        require(text, "text");
        const std::string_view s(text, text_len < 0 ? std::strlen(text) : size_t(text_len));
        const std::vector<int32_t> ids =
            model->model->vocab().tokenize(s, add_special, parse_special);
        if (ids.size() > size_t(std::numeric_limits<int32_t>::max()))
            fail("api", "too many tokens");
        const auto n = int32_t(ids.size());
        if (n > n_tokens_max) return -n;
        if (n > 0) require(tokens, "tokens");
        std::copy(ids.begin(), ids.end(), tokens);
        return n;
    });
}

int32_t loom_token_to_piece(const loom_model *model, loom_token token, char *buf, int32_t length,
                            bool special) {
    return guarded<int32_t>(std::numeric_limits<int32_t>::min(), [&] {
        require(model, "model");
        return copy_out(model->model->vocab().token_to_piece(token, special), buf, length);
    });
}

int32_t loom_detokenize(const loom_model *model, const loom_token *tokens, int32_t n_tokens,
                        char *buf, int32_t length, bool special) {
    return guarded<int32_t>(std::numeric_limits<int32_t>::min(), [&] {
        require(model, "model");
        if (n_tokens < 0) fail("api", "{} tokens", n_tokens);
        if (n_tokens > 0) require(tokens, "tokens");
        const std::span<const int32_t> ids(tokens, size_t(n_tokens));
        return copy_out(model->model->vocab().detokenize(ids, special), buf, length);
    });
}

loom_token loom_token_bos(const loom_model *model) {
    return model->model->vocab().bos();
}
loom_token loom_token_eos(const loom_model *model) {
    return model->model->vocab().eos();
}
loom_token loom_token_eot(const loom_model *model) {
    return model->model->vocab().eot();
}
bool loom_token_is_eog(const loom_model *model, loom_token token) {
    return guarded<bool>(false, [&] { return model->model->vocab().is_eog(token); });
}

void loom_memory_clear(loom_context *ctx) {
    ctx->ctx.memory().clear();
}

bool loom_seq_rm(loom_context *ctx, loom_seq_id seq, loom_pos p0, loom_pos p1) {
    return guarded<bool>(false, [&] {
        ctx->ctx.memory().seq_rm(seq, std::max(p0, 0), p1);
        return true;
    });
}

bool loom_seq_cp(loom_context *ctx, loom_seq_id src, loom_seq_id dst, loom_pos p0, loom_pos p1) {
    return guarded<bool>(false, [&] {
        ctx->ctx.memory().seq_cp(src, dst, std::max(p0, 0), p1);
        return true;
    });
}

bool loom_seq_keep(loom_context *ctx, loom_seq_id seq) {
    return guarded<bool>(false, [&] {
        ctx->ctx.memory().seq_keep(seq);
        return true;
    });
}

bool loom_seq_add(loom_context *ctx, loom_seq_id seq, loom_pos p0, loom_pos p1, loom_pos delta) {
    return guarded<bool>(false, [&] {
        ctx->ctx.memory().seq_add(seq, std::max(p0, 0), p1, delta);
        return true;
    });
}

loom_pos loom_seq_pos_min(const loom_context *ctx, loom_seq_id seq) {
    return guarded<loom_pos>(-1, [&] { return ctx->ctx.memory().seq_pos_min(seq); });
}

loom_pos loom_seq_pos_max(const loom_context *ctx, loom_seq_id seq) {
    return guarded<loom_pos>(-1, [&] { return ctx->ctx.memory().seq_pos_max(seq); });
}

size_t loom_state_seq_get(loom_context *ctx, loom_seq_id seq, uint8_t *dst, size_t size) {
    return guarded<size_t>(0, [&] {
        const std::vector<std::byte> bytes = ctx->ctx.save_seq(seq);
        if (dst != nullptr && size >= bytes.size()) std::memcpy(dst, bytes.data(), bytes.size());
        return bytes.size();
    });
}

bool loom_state_seq_set(loom_context *ctx, loom_seq_id seq, const uint8_t *src, size_t size) {
    return guarded<bool>(false, [&] {
        if (size > 0) require(src, "src");
        const auto bytes = std::as_bytes(std::span(src, size));
        ctx->ctx.place_seq(seq, ctx->ctx.read_seq(bytes, "the state"), "the state");
        return true;
    });
}

bool loom_state_seq_save_file(loom_context *ctx, const char *path, loom_seq_id seq,
                              const loom_token *tokens, size_t n_tokens) {
    return guarded<bool>(false, [&] {
        require(path, "path");
        if (n_tokens > 0) require(tokens, "tokens");
        save_sequence(path, ctx->ctx, seq, {.tokens = {tokens, tokens + n_tokens}});
        return true;
    });
}

bool loom_state_seq_load_file(loom_context *ctx, const char *path, loom_seq_id seq,
                              loom_token *tokens, size_t capacity, size_t *n_tokens) {
    return guarded<bool>(false, [&] {
        require(path, "path");
        require(n_tokens, "n_tokens");
        const SavedSequence saved = read_sequence(std::string(path), ctx->ctx);
        const std::vector<int32_t> &ids = saved.state.tokens;
        *n_tokens = ids.size();
        if (ids.size() > capacity) {
            fail("state", "{}: {} tokens, the buffer holds {}", path, ids.size(), capacity);
        }
        if (!ids.empty()) require(tokens, "tokens");
        ctx->ctx.place_seq(seq, saved.cells, path);
        std::copy(ids.begin(), ids.end(), tokens);
        return true;
    });
}

// The sampling fields, named alike in SamplingParams and loom_sampler_params.
// clang-format off
#define LOOM_SAMPLER_FIELDS(X)                                                                     \
    X(temperature) X(top_k) X(top_p) X(min_p) X(typical_p) X(repeat_penalty) X(frequency_penalty) \
    X(presence_penalty) X(penalty_last_n) X(seed)
// clang-format on
#define LOOM_COPY_FIELD(name) to.name = from.name;

struct loom_sampler_params loom_sampler_default_params(void) {
    const SamplingParams from;
    loom_sampler_params to{};
    LOOM_SAMPLER_FIELDS(LOOM_COPY_FIELD)
    return to;
}

loom_sampler *loom_sampler_new(struct loom_sampler_params from) {
    return guarded<loom_sampler *>(nullptr, [&] {
        SamplingParams to;
        LOOM_SAMPLER_FIELDS(LOOM_COPY_FIELD)
        return new loom_sampler{Sampler(to)};
    });
}

#undef LOOM_COPY_FIELD
#undef LOOM_SAMPLER_FIELDS

void loom_sampler_free(loom_sampler *sampler) {
    delete sampler;
}

loom_token loom_sampler_sample(loom_sampler *s, loom_context *c, int32_t i) {
    return guarded<loom_token>(-1, [&] {
        require(s, "sampler");
        require(c, "ctx");
        return s->sampler.sample(c->ctx.logits(output_index(c->ctx, i)));
    });
}

void loom_sampler_accept(loom_sampler *sampler, loom_token token) {
    sampler->sampler.accept(token);
}

void loom_sampler_reset(loom_sampler *sampler) {
    sampler->sampler.reset();
}

int32_t loom_chat_apply_template(const loom_model *model, const char *template_name,
                                 const struct loom_chat_message *messages, size_t n_messages,
                                 bool add_assistant, char *buf, int32_t length) {
    return guarded<int32_t>(std::numeric_limits<int32_t>::min(), [&] {
        require(model, "model");
        if (n_messages > 0) require(messages, "messages");
        const Model &m = *model->model;
        const ChatFormatter formatter =
            ChatFormatter::choose(m.file().metadata(), m.vocab(),
                                  {.family_name = template_name != nullptr ? template_name : ""});
        std::vector<ChatMessage> list;
        for (size_t i = 0; i < n_messages; ++i) {
            require(messages[i].role, "a message's role");
            require(messages[i].content, "a message's content");
            list.push_back({messages[i].role, messages[i].content});
        }
        const std::time_t now = std::time(nullptr);
        ChatRender chat{.messages = chat_messages_value(list),
                        .add_generation_prompt = add_assistant};
        localtime_r(&now, &chat.now);
        const std::string text = formatter.render(chat);
        if (text.size() >= size_t(std::numeric_limits<int32_t>::max()))
            fail("api", "text too long");
        if (int64_t(text.size()) < int64_t(length)) {  // room for the NUL too
            require(buf, "buf");
            std::memcpy(buf, text.c_str(), text.size() + 1);
        }
        return int32_t(text.size());
    });
}

}  // extern "C"
