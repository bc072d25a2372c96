/* Loom's C ABI, as llama.h is llama.cpp's: load a GGUF model, make a context, decode batches,
 * read logits and embeddings, tokenize, edit sequences, save and restore them, sample, and
 * format a chat. For C, Python (ctypes) and any language with a C FFI; libloom.so, found with
 * `pkg-config --cflags --libs loom`.
 *
 * Errors: a function that fails returns NULL, false, a negative number or 0 as its comment says,
 * and loom_last_error() then gives the message (per thread, kept until the next failure). No
 * function throws or aborts on bad input: a malformed file, an id out of range, a batch that
 * does not fit are errors, not crashes.
 *
 * Objects: a model outlives the contexts made from it; each object is used by one thread at a
 * time (a model may be shared by contexts on several threads). */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_API __attribute__((visibility("default")))

/* Changes when a struct below or a function's meaning changes. */
#define LOOM_ABI_VERSION 1

typedef int32_t loom_token;
typedef int32_t loom_pos;
typedef int32_t loom_seq_id;

typedef struct loom_model loom_model;
typedef struct loom_context loom_context;
typedef struct loom_sampler loom_sampler;

LOOM_API int32_t loom_abi_version(void);
/* The message of this thread's last failure ("" when none), e.g. "[gguf] x.gguf: ...". */
LOOM_API const char *loom_last_error(void);

/* ---- Models ---- */

struct loom_model_params {
    bool repack;   /* copy the matrices into the CPU kernels' interleaved layout (faster) */
    bool progress; /* a progress bar on stderr while loading large files */
};
LOOM_API struct loom_model_params loom_model_default_params(void);

/* NULL on failure (missing file, malformed GGUF, unsupported architecture). */
LOOM_API loom_model *loom_model_load(const char *path, struct loom_model_params params);
LOOM_API void loom_model_free(loom_model *model);

LOOM_API const char *loom_model_arch(const loom_model *model); /* "llama", "gemma2", ... */
LOOM_API int32_t loom_model_n_vocab(const loom_model *model);
LOOM_API int32_t loom_model_n_embd(const loom_model *model);
LOOM_API int32_t loom_model_n_layer(const loom_model *model);
LOOM_API int32_t loom_model_n_ctx_train(const loom_model *model);
LOOM_API uint64_t loom_model_n_params(const loom_model *model);
LOOM_API uint64_t loom_model_size(const loom_model *model); /* bytes of weights */

/* ---- Contexts ---- */

struct loom_context_params {
    uint32_t n_ctx;     /* KV cells; 0: the model's training context */
    uint32_t n_batch;   /* most tokens one loom_decode takes */
    uint32_t n_ubatch;  /* most tokens one graph computes */
    uint32_t n_seq_max; /* sequence ids 0 .. n_seq_max - 1 */
    int32_t n_threads;  /* 0: one per core */
    bool flash_attn;
    bool kv_unified; /* one KV region for all sequences (false: one stream each) */
    bool embeddings; /* keep each output's final hidden state (loom_get_embeddings_ith) */
    /* The KV cache's K and V types as llama.cpp spells them (-ctk / -ctv): "f16" (NULL: the
     * default), "f32", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"; all but f32
     * and f16 need flash_attn. */
    const char *type_k;
    const char *type_v;
};
LOOM_API struct loom_context_params loom_context_default_params(void);

/* NULL on failure (bad parameters, not enough memory). */
LOOM_API loom_context *loom_context_new(const loom_model *model, struct loom_context_params params);
LOOM_API void loom_context_free(loom_context *ctx);
LOOM_API uint32_t loom_n_ctx(const loom_context *ctx);
LOOM_API const loom_model *loom_context_model(const loom_context *ctx);

/* ---- Decoding ----
 * A batch of n_tokens tokens, each given by its id (token) or as n_embd floats (embd, when token
 * is NULL). Optional arrays: pos (NULL: each token follows its sequence's last position),
 * seq_id (NULL: sequence 0), logits (NULL: only the last token's logits are kept). */
struct loom_batch {
    int32_t n_tokens;
    const loom_token *token;
    const float *embd;
    const loom_pos *pos;
    const loom_seq_id *seq_id;
    const int8_t *logits;
};
/* The tokens of sequence 0 after what it holds, logits of the last: the simplest batch. */
LOOM_API struct loom_batch loom_batch_get_one(const loom_token *tokens, int32_t n_tokens);

/* 0 on success; -1 on failure (bad token, sequence or position, more tokens than n_batch, or no
 * room in the KV cache: the memory is then left as it was). */
LOOM_API int32_t loom_decode(loom_context *ctx, struct loom_batch batch);
/* Outputs of the last batch: the tokens whose logits flag was set, in batch order. */
LOOM_API int32_t loom_n_outputs(const loom_context *ctx);
/* Output i's logits (n_vocab floats; i < 0 counts from the end, -1 is the last), valid until the
 * next loom_decode; NULL when i is out of range. */
LOOM_API const float *loom_get_logits_ith(loom_context *ctx, int32_t i);
/* Output i's final hidden state (n_embd floats) for a context made with embeddings = true. */
LOOM_API const float *loom_get_embeddings_ith(loom_context *ctx, int32_t i);

/* ---- Vocabulary ---- */

/* Writes the tokens of text[0 .. text_len) (text_len < 0: up to its NUL) and returns how many;
 * when more than n_tokens_max, writes nothing and returns minus the number needed. add_special:
 * BOS / EOS as the vocabulary asks; parse_special: control tokens' text becomes those tokens.
 * INT32_MIN on failure. */
LOOM_API int32_t loom_tokenize(const loom_model *model, const char *text, int32_t text_len,
                               loom_token *tokens, int32_t n_tokens_max, bool add_special,
                               bool parse_special);
/* The bytes of one token / of a list of tokens, not NUL-terminated: returns the length, or minus
 * the length needed when it is more than `length` (nothing written); INT32_MIN on failure.
 * special: control tokens are rendered as their text (else left out). */
LOOM_API int32_t loom_token_to_piece(const loom_model *model, loom_token token, char *buf,
                                     int32_t length, bool special);
LOOM_API int32_t loom_detokenize(const loom_model *model, const loom_token *tokens,
                                 int32_t n_tokens, char *buf, int32_t length, bool special);
LOOM_API loom_token loom_token_bos(const loom_model *model); /* -1 when there is none */
LOOM_API loom_token loom_token_eos(const loom_model *model);
LOOM_API loom_token loom_token_eot(const loom_model *model);
/* End of generation: EOS, EOT and the vocabulary's other end tokens. */
LOOM_API bool loom_token_is_eog(const loom_model *model, loom_token token);

/* ---- Sequences (the KV cache) ----
 * Positions [p0, p1); p0 < 0 means 0, p1 < 0 means no end; seq < 0 means every sequence. */
LOOM_API void loom_memory_clear(loom_context *ctx);
/* false when the cells cannot be removed (a part of a sequence's sliding window). */
LOOM_API bool loom_seq_rm(loom_context *ctx, loom_seq_id seq, loom_pos p0, loom_pos p1);
LOOM_API bool loom_seq_cp(loom_context *ctx, loom_seq_id src, loom_seq_id dst, loom_pos p0,
                          loom_pos p1);
LOOM_API bool loom_seq_keep(loom_context *ctx, loom_seq_id seq);
/* Moves the positions of [p0, p1) by delta (the K cache is rotated on the next decode). */
LOOM_API bool loom_seq_add(loom_context *ctx, loom_seq_id seq, loom_pos p0, loom_pos p1,
                           loom_pos delta);
/* -1 when the sequence is empty. */
LOOM_API loom_pos loom_seq_pos_min(const loom_context *ctx, loom_seq_id seq);
LOOM_API loom_pos loom_seq_pos_max(const loom_context *ctx, loom_seq_id seq);

/* ---- Saved state ----
 * A sequence's KV cells as bytes: loom_state_seq_get writes them into dst when size is enough
 * and returns their size either way (0 on failure); loom_state_seq_set replaces what sequence
 * seq holds with them and returns false (the sequence unchanged) for bytes of another model or
 * KV type or truncated ones, or (the sequence then empty) when the context has no room. */
LOOM_API size_t loom_state_seq_get(loom_context *ctx, loom_seq_id seq, uint8_t *dst, size_t size);
LOOM_API bool loom_state_seq_set(loom_context *ctx, loom_seq_id seq, const uint8_t *src,
                                 size_t size);
/* The same as a file that also names the model and holds the sequence's tokens (`loom run
 * --prompt-cache` reads and writes these files). Loading writes up to `capacity` tokens and sets
 * *n_tokens to how many the file holds; false with a message for a file of another model or KV
 * type, a truncated one, or too small a capacity (the sequence then unchanged). */
LOOM_API bool loom_state_seq_save_file(loom_context *ctx, const char *path, loom_seq_id seq,
                                       const loom_token *tokens, size_t n_tokens);
LOOM_API bool loom_state_seq_load_file(loom_context *ctx, const char *path, loom_seq_id seq,
                                       loom_token *tokens, size_t capacity, size_t *n_tokens);

/* ---- Sampling ---- llama.cpp's default chain: penalties, top-k, typical, top-p, min-p,
 * temperature, a seeded draw. */
struct loom_sampler_params {
    float temperature; /* <= 0: greedy */
    int32_t top_k;     /* <= 0: off */
    float top_p;       /* >= 1: off */
    float min_p;       /* <= 0: off */
    float typical_p;   /* >= 1: off */
    float repeat_penalty, frequency_penalty, presence_penalty;
    int32_t penalty_last_n;
    uint64_t seed; /* LOOM_RANDOM_SEED: a new one each time */
};
#define LOOM_RANDOM_SEED 0xFFFFFFFFu
LOOM_API struct loom_sampler_params loom_sampler_default_params(void);
LOOM_API loom_sampler *loom_sampler_new(struct loom_sampler_params params);
LOOM_API void loom_sampler_free(loom_sampler *sampler);
/* The next token from output i's logits (as loom_get_logits_ith); -1 on failure. */
LOOM_API loom_token loom_sampler_sample(loom_sampler *sampler, loom_context *ctx, int32_t i);
/* Records a token in the history the penalties see. */
LOOM_API void loom_sampler_accept(loom_sampler *sampler, loom_token token);
LOOM_API void loom_sampler_reset(loom_sampler *sampler);

/* ---- Chat ---- */

struct loom_chat_message {
    const char *role; /* "system", "user", "assistant", ... */
    const char *content;
};
/* The prompt for these messages in the model's own template (or the built-in family named by
 * `template_name`, e.g. "chatml", when not NULL), with the assistant's turn opened when
 * add_assistant. Returns the length and writes it NUL-terminated when `length` is more than that;
 * INT32_MIN on failure (unknown family, a template that fails). */
LOOM_API int32_t loom_chat_apply_template(const loom_model *model, const char *template_name,
                                          const struct loom_chat_message *messages,
                                          size_t n_messages, bool add_assistant, char *buf,
                                          int32_t length);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_LOOM_H */
