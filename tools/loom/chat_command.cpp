// `loom chat -m MODEL [--chat-template NAME | --chat-template-file T.jinja] [--system-prompt TEXT]
// [-n N] [sampling options]`: a conversation in the terminal. Each line read from stdin is a user
// message; the answer is streamed to stdout. The prompt is the whole conversation rendered with
// the model's own Jinja chat template (engine/chat/chat_formatter.h: or a built-in format, or
// chatml when the model has none), and only the tokens past what the KV cache already holds are
// decoded.
// Ctrl-C stops the current answer, Ctrl-D (end of input) quits, /reset clears the conversation.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/commands.h"
#include "tools/loom/interrupt.h"
#include "tools/loom/model_options.h"

namespace loom::tools {

namespace {

struct ChatOptions {
    ModelOptions model;
    engine::ChatFormatChoice chat_format;  // both empty: the model's own template
    std::string system_prompt;
    int32_t n_predict = -1;       // per answer; < 0: until end of generation or a full context
    int64_t ctx_size = 4096;      // 0: the model's training context
    bool ctx_size_given = false;  // warn when the cap changes an asked-for size, not the default
    bool no_repack = false;
    engine::SamplingParams sampling;
};

// Ctrl-C sets `interrupted` while an answer is being generated; at the prompt it only reminds
// how to quit. Both flags are sig_atomic_t: the only type a handler may write portably.
volatile std::sig_atomic_t generating = 0;
volatile std::sig_atomic_t interrupted = 0;

void on_interrupt(int) {
    if (generating) {
        interrupted = 1;
    } else {
        constexpr char kHint[] = "\n(Ctrl-D quits)\n";
        [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kHint, sizeof(kHint) - 1);
    }
}

void print_piece(const std::string &piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
}

class ChatSession {
  public:
    ChatSession(const ChatOptions &options, const engine::Model &model,
                const engine::ChatFormatter &formatter, engine::Context &ctx)
        : options_(options),
          vocab_(model.vocab()),
          formatter_(formatter),
          ctx_(ctx),
          cache_(ctx),
          sampler_(options.sampling) {
        reset();
    }

    void reset() {
        messages_.clear();
        if (!options_.system_prompt.empty()) {
            messages_.push_back({"system", options_.system_prompt});
        }
        cache_.clear();
        sampler_.reset();
    }

    // Answers one user message, streaming the answer to stdout.
    void answer(const std::string &user_message) {
        messages_.push_back({"user", user_message});
        std::string text;
        try {
            text = formatter_.render({.messages = engine::chat_messages_value(messages_),
                                      .add_generation_prompt = true,
                                      .now = engine::local_time_now()});
        } catch (const Error &e) {  // the template raised or failed: this turn is dropped
            fmt::print(stderr, "loom chat: the chat template failed: {}\n", e.what());
            messages_.pop_back();
            return;
        }
        // BOS unless the template printed it; "<|im_start|>"-like text is the special token.
        const std::vector<int32_t> prompt = formatter_.tokenize(vocab_, text);
        if (int64_t(prompt.size()) > ctx_.options().n_ctx) {
            fmt::print(stderr,
                       "loom chat: the conversation ({} tokens) no longer fits the context of {} "
                       "tokens; /reset starts a new one (or raise --ctx-size)\n",
                       prompt.size(), ctx_.options().n_ctx);
            messages_.pop_back();
            return;
        }
        // From here Ctrl-C stops the answer, also while the prompt is decoded.
        interrupted = 0;
        generating = 1;
        const int64_t n_decoded = cache_.assign(prompt);
        for (size_t i = prompt.size() - size_t(n_decoded); i < prompt.size(); ++i) {
            sampler_.accept(prompt[i]);
        }
        messages_.push_back({"assistant", generate()});
        generating = 0;
        print_piece("\n");
    }

    uint64_t seed() const { return sampler_.seed(); }

  private:
    // Samples until end of generation, -n tokens, Ctrl-C or a full context; returns the text.
    std::string generate() {
        std::string text;
        for (int32_t i = 0; options_.n_predict < 0 || i < options_.n_predict; ++i) {
            if (interrupted) break;
            const int32_t token = sampler_.sample(ctx_.logits(0));
            sampler_.accept(token);
            if (vocab_.is_eog(token)) break;
            const std::string piece = vocab_.token_to_piece(token, false);
            print_piece(piece);
            text += piece;
            if (i + 1 == options_.n_predict) break;  // the last token needs no decode
            if (!cache_.fits(1)) {
                fmt::print(stderr,
                           "\nloom chat: the context is full ({} tokens); /reset starts "
                           "a new conversation\n",
                           cache_.size());
                break;
            }
            cache_.append(token);
        }
        return text;
    }

    const ChatOptions &options_;
    const engine::Vocab &vocab_;
    const engine::ChatFormatter &formatter_;
    engine::Context &ctx_;
    engine::PromptCache cache_;
    engine::Sampler sampler_;
    std::vector<engine::ChatMessage> messages_;
};

void run_chat(const ChatOptions &options) {
    const auto model = engine::Model::load(options.model.path, {.repack = !options.no_repack});
    const engine::ChatFormatter formatter = engine::ChatFormatter::choose(
        model->file().metadata(), model->vocab(), options.chat_format);
    if (!formatter.warning().empty()) fmt::print(stderr, "loom chat: {}\n", formatter.warning());
    engine::ContextOptions context = context_options(options.model);
    context.n_ctx =
        context_size("chat", options.ctx_size, options.ctx_size_given, model->hparams());
    engine::Context ctx(*model, context);
    ChatSession session(options, *model, formatter, ctx);
    const bool interactive = isatty(STDIN_FILENO);
    fmt::print(stderr,
               "loom chat: template {}, context {} tokens. Ctrl-C stops an answer, Ctrl-D quits, "
               "/reset clears the conversation.\n",
               formatter.description(), context.n_ctx);
    if (options.sampling.temperature > 0) {
        fmt::print(stderr, "loom chat: sampler seed {}\n", session.seed());
    }

    // SA_RESTART: a read of stdin interrupted by Ctrl-C resumes instead of failing, so Ctrl-C
    // at the prompt does not end the conversation.
    const ScopedSigint handler(on_interrupt, true);
    std::string line;
    while (true) {
        if (interactive) print_piece("> ");
        if (!std::getline(std::cin, line)) break;
        if (line == "/reset") {
            session.reset();
            fmt::print(stderr, "loom chat: conversation cleared\n");
        } else if (!line.empty()) {
            session.answer(line);
        }
    }
    if (interactive) print_piece("\n");
}

}  // namespace

void add_chat_command(CLI::App &app, int &exit_code) {
    CLI::App *command = app.add_subcommand("chat", "chat with a model in the terminal");
    auto options = std::make_shared<ChatOptions>();
    engine::SamplingParams &sampling = options->sampling;
    add_model_options(*command, options->model, "f16");
    add_chat_template_options(*command, options->chat_format);
    command->add_option("--system-prompt", options->system_prompt,
                        "a system message that opens the conversation");
    command
        ->add_option("-n,--n-predict", options->n_predict,
                     "most tokens per answer (-1: until end of generation or a full context)")
        ->capture_default_str();
    command
        ->add_option("-c,--ctx-size", options->ctx_size,
                     "context size in tokens, the whole conversation (0: the model's training "
                     "context)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    add_sampling_options(*command, sampling);
    command->add_flag("--no-repack", options->no_repack,
                      "keep block-format weights in the file's layout");
    command->callback([command, options, &exit_code] {
        options->ctx_size_given = command->count("--ctx-size") > 0;
        run_chat(*options);
        exit_code = 0;
    });
}

}  // namespace loom::tools
