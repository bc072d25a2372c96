/* The C ABI from a C program built against the installed header and library (check_c_api.sh):
 * llama.cpp's logits and greedy run for a fixture, tokenizing, embeddings, sequence operations,
 * saved state with its refusals, sampling and chat templates, and the errors bad input gets.
 *
 * usage: c_api_test MODEL LOGITS_F32 PROMPT TOKENS GREEDY_TOKENS GREEDY_TEXT TMP_DIR
 * (TOKENS and GREEDY_TOKENS comma-separated; the fixture's case.json gives them all). */
#include <loom/loom.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, " (last error: %s)\n", loom_last_error());     \
            ++failures;                                                    \
        }                                                                  \
    } while (0)

static int parse_ids(const char *text, loom_token *out, int max) {
    int n = 0;
    for (const char *p = text; *p != '\0' && n < max;) {
        char *end = NULL;
        out[n++] = (loom_token)strtol(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static float *read_floats(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    float *v = malloc(n * sizeof *v);
    const size_t got = fread(v, sizeof *v, n, f);
    fclose(f);
    if (got != n) {
        free(v);
        return NULL;
    }
    return v;
}

static int same_floats(const float *a, const float *b, int n) {
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static struct loom_context_params fixture_params(void) {
    struct loom_context_params p = loom_context_default_params();
    p.n_ctx = 256;
    p.n_threads = 2;
    p.type_k = p.type_v = "f32"; /* the fixture's setting */
    return p;
}

/* Every position's logits of the prompt against llama.cpp's. */
static void check_logits(const loom_model *model, const loom_token *tokens, int n,
                         const float *want) {
    loom_context *ctx = loom_context_new(model, fixture_params());
    CHECK(ctx != NULL, "context");
    int8_t flags[256];
    for (int i = 0; i < n; ++i) flags[i] = 1;
    struct loom_batch batch = loom_batch_get_one(tokens, n);
    batch.logits = flags;
    CHECK(loom_decode(ctx, batch) == 0, "decode");
    CHECK(loom_n_outputs(ctx) == n, "%d outputs", loom_n_outputs(ctx));
    const int n_vocab = loom_model_n_vocab(model);
    double err = 0.0, ref = 0.0;
    for (int i = 0; i < n; ++i) {
        const float *row = loom_get_logits_ith(ctx, i);
        CHECK(row != NULL, "row %d", i);
        if (row == NULL) break;
        for (int v = 0; v < n_vocab; ++v) {
            const double w = want[(size_t)i * n_vocab + v];
            err += (row[v] - w) * (row[v] - w);
            ref += w * w;
        }
    }
    CHECK(err / ref < 1e-10, "NMSE %g against llama.cpp", err / ref);
    CHECK(loom_get_logits_ith(ctx, -1) == loom_get_logits_ith(ctx, n - 1), "-1 is the last");
    CHECK(loom_get_logits_ith(ctx, n) == NULL, "output out of range");
    CHECK(loom_seq_pos_max(ctx, 0) == n - 1, "pos max %d", loom_seq_pos_max(ctx, 0));
    loom_context_free(ctx);
}

/* Greedy generation after the prompt: llama.cpp's tokens and text. */
static void check_greedy(const loom_model *model, const loom_token *prompt, int n_prompt,
                         const loom_token *want, int n_want, const char *want_text) {
    loom_context *ctx = loom_context_new(model, fixture_params());
    struct loom_sampler_params sp = loom_sampler_default_params();
    sp.temperature = 0.0f;
    loom_sampler *greedy = loom_sampler_new(sp);
    CHECK(loom_decode(ctx, loom_batch_get_one(prompt, n_prompt)) == 0, "prompt");
    loom_token got[256];
    for (int i = 0; i < n_want; ++i) {
        got[i] = loom_sampler_sample(greedy, ctx, -1);
        loom_sampler_accept(greedy, got[i]);
        CHECK(loom_decode(ctx, loom_batch_get_one(&got[i], 1)) == 0, "step %d", i);
    }
    CHECK(memcmp(got, want, (size_t)n_want * sizeof *got) == 0, "greedy tokens");
    /* The pieces printed one after the other, as a streaming program shows them. */
    char text[4096];
    int32_t len = 0;
    for (int i = 0; i < n_want; ++i) {
        const int32_t n = loom_token_to_piece(model, got[i], text + len, 64, false);
        CHECK(n >= 0, "piece %d", i);
        if (n < 0) return;
        len += n;
    }
    text[len] = '\0';
    CHECK(strcmp(text, want_text) == 0, "text \"%s\"", text);
    /* Detokenizing the list drops the first piece's leading space (llama_detokenize). */
    char whole[4096];
    const int32_t n_whole = loom_detokenize(model, got, n_want, whole, sizeof whole - 1, false);
    CHECK(n_whole > 0, "detokenize %d", n_whole);
    if (n_whole > 0) {
        whole[n_whole] = '\0';
        CHECK(strcmp(whole, want_text + (want_text[0] == ' ')) == 0, "detokenized \"%s\"", whole);
    }
    CHECK(loom_detokenize(model, got, n_want, whole, 3, false) == -n_whole, "too small a buffer");
    loom_sampler_free(greedy);
    loom_context_free(ctx);
}

/* A copied sequence continues as the original (bit for bit: a stream per sequence); a cut one
 * ends where it was cut. */
static void check_sequences(const loom_model *model, const loom_token *prompt, int n) {
    struct loom_context_params p = fixture_params();
    p.n_seq_max = 2;
    p.kv_unified = false;
    loom_context *ctx = loom_context_new(model, p);
    CHECK(loom_decode(ctx, loom_batch_get_one(prompt, n)) == 0, "prompt");
    CHECK(loom_seq_cp(ctx, 0, 1, -1, -1), "seq_cp");
    const loom_token next[2] = {prompt[1], prompt[1]};
    const loom_seq_id seqs[2] = {0, 1};
    const int8_t flags[2] = {1, 1};
    const struct loom_batch both = {.n_tokens = 2, .token = next, .seq_id = seqs, .logits = flags};
    CHECK(loom_decode(ctx, both) == 0, "both");
    const int n_vocab = loom_model_n_vocab(model);
    CHECK(same_floats(loom_get_logits_ith(ctx, 0), loom_get_logits_ith(ctx, 1), n_vocab),
          "the copy continues as the original");
    CHECK(loom_seq_pos_max(ctx, 1) == n, "pos max %d", loom_seq_pos_max(ctx, 1));
    CHECK(loom_seq_rm(ctx, 1, 10, -1), "seq_rm");
    CHECK(loom_seq_pos_max(ctx, 1) == 9, "after seq_rm %d", loom_seq_pos_max(ctx, 1));
    CHECK(loom_seq_pos_max(ctx, 0) == n, "sequence 0 untouched");
    CHECK(!loom_seq_rm(ctx, 7, 0, -1), "unknown sequence");
    CHECK(strstr(loom_last_error(), "7") != NULL, "the message names it");
    loom_memory_clear(ctx);
    CHECK(loom_seq_pos_max(ctx, 0) == -1 && loom_seq_pos_max(ctx, 1) == -1, "cleared");
    loom_context_free(ctx);
}

/* Saved state: bytes and files restore logits bit for bit; bad ones are refused and leave the
 * sequence as it was. */
static void check_state(const loom_model *model, const loom_token *prompt, int n,
                        const char *tmp) {
    loom_context *ctx = loom_context_new(model, fixture_params());
    const int n_vocab = loom_model_n_vocab(model);
    CHECK(loom_decode(ctx, loom_batch_get_one(prompt, n - 1)) == 0, "prompt");
    const size_t size = loom_state_seq_get(ctx, 0, NULL, 0);
    CHECK(size > 0, "state size");
    uint8_t *bytes = malloc(size);
    CHECK(loom_state_seq_get(ctx, 0, bytes, size) == size, "state bytes");
    CHECK(loom_decode(ctx, loom_batch_get_one(&prompt[n - 1], 1)) == 0, "last token");
    float *want = malloc((size_t)n_vocab * sizeof *want);
    memcpy(want, loom_get_logits_ith(ctx, -1), (size_t)n_vocab * sizeof *want);

    loom_memory_clear(ctx);
    CHECK(loom_state_seq_set(ctx, 0, bytes, size), "restore");
    CHECK(loom_seq_pos_max(ctx, 0) == n - 2, "restored to %d", loom_seq_pos_max(ctx, 0));
    CHECK(loom_decode(ctx, loom_batch_get_one(&prompt[n - 1], 1)) == 0, "last token again");
    CHECK(same_floats(loom_get_logits_ith(ctx, -1), want, n_vocab), "same logits after restore");
    CHECK(!loom_state_seq_set(ctx, 0, bytes, size / 2), "truncated bytes");
    CHECK(strstr(loom_last_error(), "[state]") != NULL, "a state error");
    CHECK(loom_seq_pos_max(ctx, 0) == n - 1, "left as it was");

    char path[1024];
    snprintf(path, sizeof path, "%s/c_api_test.seq", tmp);
    CHECK(loom_state_seq_save_file(ctx, path, 0, prompt, (size_t)n), "save file");
    loom_memory_clear(ctx);
    loom_token tokens[256];
    size_t n_tokens = 0;
    CHECK(!loom_state_seq_load_file(ctx, path, 0, tokens, 3, &n_tokens), "too small a buffer");
    CHECK(n_tokens == (size_t)n, "says how many: %zu", n_tokens);
    CHECK(loom_seq_pos_max(ctx, 0) == -1, "nothing placed");
    CHECK(loom_state_seq_load_file(ctx, path, 0, tokens, 256, &n_tokens), "load file");
    CHECK(n_tokens == (size_t)n && memcmp(tokens, prompt, (size_t)n * sizeof *tokens) == 0,
          "the tokens back");
    CHECK(loom_seq_pos_max(ctx, 0) == n - 1, "the cells back");
    CHECK(!loom_state_seq_load_file(ctx, "/nonexistent/x.seq", 0, tokens, 256, &n_tokens),
          "a missing file");

    struct loom_context_params f16 = fixture_params();
    f16.type_k = f16.type_v = "f16";
    loom_context *other = loom_context_new(model, f16);
    CHECK(!loom_state_seq_load_file(other, path, 0, tokens, 256, &n_tokens), "another KV type");
    CHECK(strstr(loom_last_error(), "KV type") != NULL, "says so");
    loom_context_free(other);
    remove(path);
    free(want);
    free(bytes);
    loom_context_free(ctx);
}

static void check_embeddings(const loom_model *model, const loom_token *prompt, int n) {
    struct loom_context_params p = fixture_params();
    p.embeddings = true;
    loom_context *ctx = loom_context_new(model, p);
    CHECK(loom_decode(ctx, loom_batch_get_one(prompt, n)) == 0, "decode");
    const float *e = loom_get_embeddings_ith(ctx, -1);
    CHECK(e != NULL, "embeddings");
    double norm = 0.0;
    for (int i = 0; e != NULL && i < loom_model_n_embd(model); ++i) norm += (double)e[i] * e[i];
    CHECK(isfinite(norm) && norm > 0.0, "norm %g", norm);
    loom_context_free(ctx);
    loom_context *without = loom_context_new(model, fixture_params());
    CHECK(loom_decode(without, loom_batch_get_one(prompt, n)) == 0, "decode");
    CHECK(loom_get_embeddings_ith(without, 0) == NULL, "no embeddings without asking");
    loom_context_free(without);
}

static void check_bad_input(const loom_model *model) {
    CHECK(loom_model_load("/nonexistent/model.gguf", loom_model_default_params()) == NULL,
          "a missing file");
    CHECK(strstr(loom_last_error(), "/nonexistent/model.gguf") != NULL, "named");
    loom_context *ctx = loom_context_new(model, fixture_params());
    const loom_token bad = loom_model_n_vocab(model) + 5;
    CHECK(loom_decode(ctx, loom_batch_get_one(&bad, 1)) == -1, "a token out of range");
    CHECK(loom_seq_pos_max(ctx, 0) == -1, "nothing decoded");
    CHECK(loom_decode(ctx, loom_batch_get_one(&bad, 0)) == -1, "an empty batch");
    struct loom_context_params p = fixture_params();
    p.type_k = "q9_9";
    CHECK(loom_context_new(model, p) == NULL, "an unknown KV type");
    CHECK(strstr(loom_last_error(), "q9_9") != NULL, "named");
    CHECK(loom_token_to_piece(model, -3, NULL, 0, false) == INT32_MIN, "a token out of range");
    loom_context_free(ctx);
}

static void check_sampling_and_chat(const loom_model *model, const loom_token *prompt, int n) {
    loom_context *ctx = loom_context_new(model, fixture_params());
    CHECK(loom_decode(ctx, loom_batch_get_one(prompt, n)) == 0, "decode");
    struct loom_sampler_params sp = loom_sampler_default_params();
    sp.seed = 42;
    sp.temperature = 1.5f;
    loom_sampler *a = loom_sampler_new(sp), *b = loom_sampler_new(sp);
    int differs = 0;
    for (int i = 0; i < 20; ++i) {
        const loom_token x = loom_sampler_sample(a, ctx, -1), y = loom_sampler_sample(b, ctx, -1);
        CHECK(x == y && x >= 0, "draw %d: %d vs %d", i, x, y);
        differs |= x != loom_sampler_sample(a, ctx, -1);
        loom_sampler_sample(b, ctx, -1);
    }
    CHECK(differs, "a seeded draw at temperature 1.5 is not always the same token");
    sp.repeat_penalty = -1.0f;
    CHECK(loom_sampler_new(sp) == NULL, "a negative repeat penalty");
    loom_sampler_free(a);
    loom_sampler_free(b);

    const struct loom_chat_message chat[2] = {{"system", "Be brief."}, {"user", "Hi"}};
    const char *want =
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n";
    char buf[512];
    const int32_t len = loom_chat_apply_template(model, "chatml", chat, 2, true, buf, sizeof buf);
    CHECK(len == (int32_t)strlen(want) && strcmp(buf, want) == 0, "chatml: %s", buf);
    CHECK(loom_chat_apply_template(model, "chatml", chat, 2, true, NULL, 0) == len,
          "the length without a buffer");
    CHECK(loom_chat_apply_template(model, "no-such-family", chat, 2, true, buf, sizeof buf) ==
              INT32_MIN,
          "an unknown family");
    loom_context_free(ctx);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s MODEL LOGITS PROMPT TOKENS GREEDY GREEDY_TEXT TMP\n", argv[0]);
        return 2;
    }
    CHECK(loom_abi_version() == LOOM_ABI_VERSION, "ABI %d", loom_abi_version());
    loom_token want_tokens[256], greedy[256];
    const int n_tokens = parse_ids(argv[4], want_tokens, 256);
    const int n_greedy = parse_ids(argv[5], greedy, 256);

    loom_model *model = loom_model_load(argv[1], loom_model_default_params());
    if (model == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], loom_last_error());
        return 1;
    }
    CHECK(strcmp(loom_model_arch(model), "llama") == 0, "arch %s", loom_model_arch(model));
    const int n_vocab = loom_model_n_vocab(model);

    loom_token tokens[256];
    const int32_t n = loom_tokenize(model, argv[3], -1, tokens, 256, true, false);
    CHECK(n == n_tokens && memcmp(tokens, want_tokens, (size_t)n * sizeof *tokens) == 0,
          "llama.cpp's tokens (%d of them)", n);
    CHECK(loom_tokenize(model, argv[3], -1, tokens, 2, true, false) == -n, "too small a buffer");
    CHECK(tokens[0] == loom_token_bos(model), "BOS first");
    CHECK(loom_token_is_eog(model, loom_token_eos(model)), "EOS ends generation");

    float *logits = read_floats(argv[2], (size_t)n_tokens * (size_t)n_vocab);
    CHECK(logits != NULL, "cannot read %s", argv[2]);
    if (logits != NULL) check_logits(model, want_tokens, n_tokens, logits);
    check_greedy(model, want_tokens, n_tokens, greedy, n_greedy, argv[6]);
    check_sequences(model, want_tokens, n_tokens);
    check_state(model, want_tokens, n_tokens, argv[7]);
    check_embeddings(model, want_tokens, n_tokens);
    check_sampling_and_chat(model, want_tokens, n_tokens);
    check_bad_input(model);

    free(logits);
    loom_model_free(model);
    if (failures > 0) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("c_api_test: all checks passed\n");
    return 0;
}
