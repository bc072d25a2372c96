// `loom run -m MODEL -p PROMPT [-n N] [sampling options] [-c C] [--ignore-eos] [--no-repack]
//           [--raw | --chat-template NAME | --chat-template-file T.jinja] [--system-prompt S]
//           [--prompt-cache FILE] [--grammar G | --grammar-file G.gbnf | --json-schema S |
//           --json-schema-file S.json]`:
// generates text after a prompt, streaming each piece to stdout, then prints the load, prompt and
// generation timings on stderr. As llama-cli and ollama do, a model with a chat template gets
// the prompt as a user's message in its own format (and only the answer is printed); a model
// without one, or --raw, gets the prompt as it is, echoed before the continuation. With
// --prompt-cache (llama-cli's), the prompt's KV cells are saved after it is decoded, and a later
// run whose prompt starts the same way decodes only the rest. With a grammar (GBNF, llama.cpp's
// format: engine/grammar/gbnf.h), or a JSON Schema made into one (engine/grammar/json_schema.h),
// every token continues text the grammar allows, and generation ends only where that text is
// whole.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/commands.h"
#include "tools/loom/interrupt.h"
#include "tools/loom/model_options.h"

namespace loom::tools {

namespace {

struct RunOptions {
    ModelOptions model;
    std::string prompt;
    int32_t n_predict = 128;      // < 0: until end of generation or a full context
    int64_t ctx_size = 4096;      // 0: the model's training context
    bool ctx_size_given = false;  // warn when the cap changes an asked-for size, not the default
    bool ignore_eos = false;
    bool no_repack = false;
    bool context_shift = false;  // at a full context, drop the older half after the kept tokens
    int32_t n_keep = 0;          // tokens of the prompt a shift keeps (after BOS)
    engine::SamplingParams sampling;
    bool raw = false;  // the prompt as it is, even where the model has a chat template
    engine::ChatFormatChoice chat_format;
    std::string system_prompt;
    std::string prompt_cache;  // a sequence file (engine/context/sequence_state.h), or none
    std::string grammar;       // GBNF text, or empty
    std::string grammar_file;
    std::string json_schema;  // JSON Schema text, or empty
    std::string json_schema_file;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Timings {
    double load_ms = 0.0;
    int64_t n_prompt = 0;
    double prompt_ms = 0.0;
    int64_t n_eval = 0;  // tokens decoded one at a time after the prompt
    double eval_ms = 0.0;
    int64_t n_sampled = 0;
    double sample_ms = 0.0;
};

// Ctrl-C stops the generation after the token being made; the timings so far are printed and
// the exit code is 130 (128 + SIGINT), as a shell reports a process the signal ended.
volatile std::sig_atomic_t interrupted = 0;
void on_interrupt(int) {
    interrupted = 1;
}

// Decodes the prompt from token `first` on (those before are in the cache) in batches of at most
// n_batch tokens; only the last token wants logits. Ctrl-C stops it between batches.
void decode_prompt(engine::Context &ctx, std::span<const int32_t> tokens, int64_t first) {
    const auto n = int64_t(tokens.size());
    for (int64_t start = first; start < n && !interrupted; start += ctx.options().n_batch) {
        const int64_t end = std::min(n, start + ctx.options().n_batch);
        engine::Batch batch;
        for (int64_t i = start; i < end; ++i) {
            batch.add(tokens[size_t(i)], engine::Pos(i), 0, i == n - 1);
        }
        ctx.decode(batch);
    }
}

// --prompt-cache: sequence 0 takes the file's cells as far as its tokens match the prompt's, but
// never the last prompt token's (decoded again for its logits). Returns how many prompt tokens
// are cached: 0 where the file is not there yet. The file's generator replaces the sampler's
// where no --seed was given, so that a rerun draws what the saved run drew.
int64_t restore_prompt_cache(const std::string &path, engine::Context &ctx,
                             engine::Sampler &sampler, std::span<const int32_t> prompt,
                             bool restore_rng, bool &prompt_saved) {
    prompt_saved = false;
    if (!std::filesystem::exists(path)) {
        fmt::print(stderr, "loom run: prompt cache {}: not there yet; saved after the prompt\n",
                   path);
        return 0;
    }
    const engine::SequenceState saved = engine::load_sequence(path, ctx, 0);
    size_t n = 0;
    while (n < saved.tokens.size() && n < prompt.size() && saved.tokens[n] == prompt[n]) ++n;
    n = std::min(n, prompt.size() - 1);
    if (!ctx.memory().seq_can_resume(0, engine::Pos(n))) n = 0;  // a window let part of it go
    ctx.memory().seq_rm(0, engine::Pos(n), -1);
    if (restore_rng && n > 0 && !saved.rng.empty()) sampler.set_rng_state(saved.rng);
    prompt_saved = saved.tokens.size() == prompt.size() && n + 1 == prompt.size();
    fmt::print(stderr, "loom run: prompt cache {}: {} of the prompt's {} tokens reused\n", path, n,
               prompt.size());
    return int64_t(n);
}

void print_piece(const std::string &piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
}

void print_rate(const char *what, double ms, int64_t n, const char *unit) {
    const double per_token = n > 0 ? ms / double(n) : 0.0;
    const double per_second = ms > 0.0 ? 1e3 * double(n) / ms : 0.0;
    fmt::print(stderr,
               "loom run: {:>16} = {:10.2f} ms / {:5} {:6} ({:8.2f} ms per token, {:8.2f} tokens "
               "per second)\n",
               what, ms, n, unit, per_token, per_second);
}

void print_timings(const Timings &t, const engine::DecodeStats &stats) {
    fmt::print(stderr, "\nloom run: {:>16} = {:10.2f} ms\n", "load time", t.load_ms);
    print_rate("prompt eval time", t.prompt_ms, t.n_prompt, "tokens");
    print_rate("eval time", t.eval_ms, t.n_eval, "runs");
    print_rate("sampling time", t.sample_ms, t.n_sampled, "runs");
    fmt::print(stderr, "loom run: {:>16} = {} built, {} reused\n", "graphs", stats.graph_builds,
               stats.graph_reuses);
}

// The prompt's tokens: the text as it is (BOS per the vocabulary, "<s>"-like text the token, as
// llama-cli), or the text as a user's message in the chat format, which is used where one was
// chosen, or where the model has a template and --raw is not given. Sets `chat` accordingly.
std::vector<int32_t> prompt_tokens(const RunOptions &options, const engine::Model &model,
                                   bool &chat) {
    const engine::Vocab &vocab = model.vocab();
    const bool chosen =
        !options.chat_format.family_name.empty() || !options.chat_format.template_file.empty();
    chat = !options.raw && (chosen || model.file().metadata().has("tokenizer.chat_template"));
    if (options.raw && chosen) fail("run", "--raw sends the prompt as it is: no chat template");
    if (!chat && !options.system_prompt.empty()) {
        fail("run", "--system-prompt needs a chat template ({})",
             options.raw ? "--raw sends the prompt as it is"
                         : "the model has none; --chat-template NAME gives one");
    }
    if (!chat) return vocab.tokenize(options.prompt, true, true);
    const engine::ChatFormatter formatter =
        engine::ChatFormatter::choose(model.file().metadata(), vocab, options.chat_format);
    if (!formatter.warning().empty()) fmt::print(stderr, "loom run: {}\n", formatter.warning());
    std::vector<engine::ChatMessage> messages;
    if (!options.system_prompt.empty()) messages.push_back({"system", options.system_prompt});
    messages.push_back({"user", options.prompt});
    const std::string text = formatter.render({.messages = engine::chat_messages_value(messages),
                                               .add_generation_prompt = true,
                                               .now = engine::local_time_now()});
    fmt::print(stderr, "loom run: the prompt as a user's message, in {} (--raw: as it is)\n",
               formatter.description());
    return formatter.tokenize(vocab, text);
}

// The grammar of --grammar, --grammar-file, --json-schema or --json-schema-file over the model's
// tokens, or none.
std::unique_ptr<engine::grammar::TokenGrammar> token_grammar(const RunOptions &options,
                                                             const engine::Vocab &vocab) {
    const int given = int(!options.grammar.empty()) + int(!options.grammar_file.empty()) +
                      int(!options.json_schema.empty()) + int(!options.json_schema_file.empty());
    if (given == 0) return nullptr;
    if (given > 1) {
        fail("run", "--grammar, --grammar-file, --json-schema, --json-schema-file: give one");
    }
    std::string text = options.grammar;
    if (!options.grammar_file.empty())
        text = read_text_file(options.grammar_file, "run", "grammar");
    if (!options.json_schema.empty())
        text = engine::grammar::json_schema_to_gbnf(std::string_view(options.json_schema));
    if (!options.json_schema_file.empty()) {
        text = engine::grammar::json_schema_to_gbnf(
            std::string_view(read_text_file(options.json_schema_file, "run", "JSON Schema")));
    }
    return engine::grammar::TokenGrammar::for_vocab(engine::grammar::parse_gbnf(text), vocab);
}

// Returns false when Ctrl-C stopped it.
bool run_generation(const RunOptions &options) {
    Timings timings;
    const auto load_start = Clock::now();
    const auto model = engine::Model::load(options.model.path, {.repack = !options.no_repack});
    timings.load_ms = ms_since(load_start);
    const engine::Vocab &vocab = model->vocab();

    engine::ContextOptions context = context_options(options.model);
    context.n_ctx = context_size("run", options.ctx_size, options.ctx_size_given, model->hparams());
    bool chat = false;
    const std::vector<int32_t> prompt = prompt_tokens(options, *model, chat);
    if (prompt.empty()) fail("run", "the prompt has no tokens");
    if (int64_t(prompt.size()) > context.n_ctx) {
        fail("run", "the prompt has {} tokens, more than the context's {} (raise --ctx-size)",
             prompt.size(), context.n_ctx);
    }
    if (options.context_shift) engine::require_context_shift(*model, "run");
    // As llama.cpp: BOS is always kept, then --keep tokens of the prompt.
    const auto n_keep = engine::Pos(
        std::min<int64_t>(int64_t(prompt.size()), options.n_keep + (vocab.add_bos() ? 1 : 0)));
    if (options.context_shift && n_keep >= context.n_ctx - 1) {
        fail("run", "--keep {} leaves no room to shift a context of {} tokens", options.n_keep,
             context.n_ctx);
    }
    engine::Context ctx(*model, context);
    fmt::print(stderr, "loom run: KV cache {}\n", engine::describe_memory(ctx.memory()));
    const std::unique_ptr<engine::grammar::TokenGrammar> grammar = token_grammar(options, vocab);
    engine::Sampler sampler(options.sampling);
    for (const int32_t token : prompt) sampler.accept(token);
    bool prompt_saved = false;
    const bool restore_rng = options.sampling.seed == engine::kRandomSeed;
    const int64_t cached = options.prompt_cache.empty()
                               ? 0
                               : restore_prompt_cache(options.prompt_cache, ctx, sampler, prompt,
                                                      restore_rng, prompt_saved);
    if (options.sampling.temperature > 0) {
        if (cached > 0 && restore_rng) {
            fmt::print(stderr, "loom run: sampler state from the prompt cache\n");
        } else {
            fmt::print(stderr, "loom run: sampler seed {}\n", sampler.seed());
        }
    }
    if (!chat) {
        for (const int32_t token : prompt) print_piece(vocab.token_to_piece(token, false));
    }

    interrupted = 0;
    const ScopedSigint handler(on_interrupt, false);
    const auto prompt_start = Clock::now();
    decode_prompt(ctx, prompt, cached);
    timings.prompt_ms = ms_since(prompt_start);
    timings.n_prompt = int64_t(prompt.size()) - cached;
    if (!options.prompt_cache.empty() && !prompt_saved && !interrupted) {
        const auto logits = ctx.logits(0);
        engine::save_sequence(options.prompt_cache, ctx, 0,
                              {.tokens = prompt,
                               .logits = {logits.begin(), logits.end()},
                               .rng = sampler.rng_state()});
    }

    auto n_past = engine::Pos(prompt.size());
    for (int32_t i = 0; (options.n_predict < 0 || i < options.n_predict) && !interrupted; ++i) {
        const auto sample_start = Clock::now();
        const int32_t token = sampler.sample(ctx.logits(0), grammar.get());
        sampler.accept(token);
        if (grammar != nullptr) grammar->accept(token);
        timings.sample_ms += ms_since(sample_start);
        ++timings.n_sampled;
        if (!options.ignore_eos && vocab.is_eog(token)) break;
        print_piece(vocab.token_to_piece(token, false));
        if (i + 1 == options.n_predict) break;  // the last token needs no decode
        if (n_past >= ctx.options().n_ctx && !options.context_shift) {
            fmt::print(stderr, "\nloom run: the context is full ({} tokens); stopping\n", n_past);
            break;
        }
        if (n_past >= ctx.options().n_ctx)
            n_past = engine::shift_context(ctx.memory(), 0, n_past, n_keep);
        engine::Batch batch;
        batch.add(token, n_past++, 0, true);
        const auto eval_start = Clock::now();
        ctx.decode(batch);
        timings.eval_ms += ms_since(eval_start);
        ++timings.n_eval;
    }
    print_piece("\n");
    if (interrupted) fmt::print(stderr, "loom run: interrupted\n");
    print_timings(timings, ctx.stats());
    return !interrupted;
}

}  // namespace

void add_run_command(CLI::App &app, int &exit_code) {
    CLI::App *command = app.add_subcommand("run", "generate text after a prompt");
    auto options = std::make_shared<RunOptions>();
    engine::SamplingParams &sampling = options->sampling;
    add_model_options(*command, options->model, "f16");
    command->add_option("-p,--prompt", options->prompt, "the text to continue")->required();
    command
        ->add_option("-n,--n-predict", options->n_predict,
                     "tokens to generate (-1: until end of generation or a full context)")
        ->capture_default_str();
    command
        ->add_option("-c,--ctx-size", options->ctx_size,
                     "context size in tokens (0: the model's training context)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    add_sampling_options(*command, sampling);
    command->add_flag("--ignore-eos", options->ignore_eos, "go on past end-of-generation tokens");
    add_context_shift_options(*command, options->context_shift, options->n_keep, "stopping");
    command->add_flag("--no-repack", options->no_repack,
                      "keep block-format weights in the file's layout");
    command->add_flag("--raw,--no-conversation", options->raw,
                      "send the prompt as it is, not as a user's message in the model's chat "
                      "template");
    add_chat_template_options(*command, options->chat_format);
    command->add_option("--system-prompt", options->system_prompt,
                        "a system message before the prompt (chat templates only)");
    command->add_option("--prompt-cache", options->prompt_cache,
                        "a file for the prompt's KV cache: saved after the prompt, and a later "
                        "run of this model whose prompt starts the same way decodes only the rest");
    command->add_option("--grammar", options->grammar,
                        "a GBNF grammar (llama.cpp's format) the generated text must follow");
    command->add_option("--grammar-file", options->grammar_file, "a file with a GBNF grammar");
    command->add_option("-j,--json-schema", options->json_schema,
                        "a JSON Schema the generated text must be a JSON document of");
    command->add_option("--json-schema-file", options->json_schema_file,
                        "a file with a JSON Schema");
    command->callback([command, options, &exit_code] {
        options->ctx_size_given = command->count("--ctx-size") > 0;
        exit_code = run_generation(*options) ? 0 : 128 + SIGINT;
    });
}

}  // namespace loom::tools
