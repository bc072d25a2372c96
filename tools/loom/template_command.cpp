// `loom template [-m MODEL | --file T.jinja] --messages M.json [--tools T.json]
// [--add-generation-prompt] [--bos-token S] [--eos-token S] [--now YYYY-MM-DD]`: the prompt a
// chat template makes of a conversation, printed exactly (no newline added), as transformers'
// apply_chat_template(messages, tools=tools, add_generation_prompt=...) renders it. Messages
// and tools are OpenAI's JSON; with -m the template and the BOS / EOS texts are the model's.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "loom/engine.h"
#include "loom/error.h"
#include "loom/gguf.h"
#include "tools/loom/commands.h"
#include "tools/loom/model_options.h"

namespace loom::tools {

namespace {

struct TemplateOptions {
    std::string model;
    std::string template_file;
    std::string messages_file;
    std::string tools_file;
    bool add_generation_prompt = false;
    std::optional<std::string> bos_token;
    std::optional<std::string> eos_token;
    std::string now;  // YYYY-MM-DD; empty: the local time now
};

// Midnight of YYYY-MM-DD, with the weekday and day of the year strftime's %a and %j need.
std::tm parse_date(const std::string &text) {
    std::tm date{};
    const char *end = strptime(text.c_str(), "%Y-%m-%d", &date);
    if (end == nullptr || *end != '\0')
        fail("template", "--now '{}' is not a YYYY-MM-DD date", text);
    const int day = date.tm_mday, month = date.tm_mon;
    const std::time_t t = timegm(&date);  // normalises, fills tm_wday and tm_yday
    if (t == std::time_t(-1) || date.tm_mday != day || date.tm_mon != month) {
        fail("template", "--now '{}' is not a date", text);
    }
    return date;
}

void run_template(const TemplateOptions &options) {
    if (options.model.empty() == options.template_file.empty()) {
        fail("template", "pass either -m MODEL or --file TEMPLATE");
    }
    std::string source, bos, eos;
    if (!options.model.empty()) {
        const gguf::File file(options.model);
        const auto jinja = file.metadata().get_optional<std::string>("tokenizer.chat_template");
        if (!jinja)
            fail("template", "{} has no chat template (tokenizer.chat_template)", options.model);
        source = *jinja;
        if (!options.bos_token || !options.eos_token) {
            const engine::Vocab vocab = engine::Vocab::from_gguf(file);
            const auto text = [&](int32_t id) {
                return id >= 0 && id < vocab.n_tokens() ? vocab.token_text(id) : std::string();
            };
            bos = text(vocab.bos());
            eos = text(vocab.eos());
        }
    } else {
        source = read_text_file(options.template_file, "template", "template");
    }
    const engine::JinjaChatTemplate chat_template(source, options.bos_token.value_or(bos),
                                                  options.eos_token.value_or(eos));
    engine::ChatRender chat;
    chat.messages = engine::chat_messages_from_json(
        read_text_file(options.messages_file, "template", "messages"));
    if (!options.tools_file.empty()) {
        chat.tools =
            engine::chat_tools_from_json(read_text_file(options.tools_file, "template", "tools"));
    }
    chat.add_generation_prompt = options.add_generation_prompt;
    chat.now = options.now.empty() ? engine::local_time_now() : parse_date(options.now);
    // As transformers renders it: a template that fails on these messages fails here too.
    const std::string prompt = chat_template.render_strict(chat);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
}

}  // namespace

void add_template_command(CLI::App &app, int &exit_code) {
    CLI::App *command =
        app.add_subcommand("template", "print the prompt a chat template makes of messages");
    auto options = std::make_shared<TemplateOptions>();
    auto *model = command->add_option("-m,--model", options->model,
                                      "the GGUF model whose tokenizer.chat_template to use");
    command->add_option("--file", options->template_file, "a Jinja chat template file")
        ->excludes(model);
    command
        ->add_option("--messages", options->messages_file,
                     "the conversation: a JSON file of OpenAI chat messages")
        ->required();
    command->add_option("--tools", options->tools_file,
                        "a JSON file of OpenAI tools (default: none)");
    command->add_flag("--add-generation-prompt", options->add_generation_prompt,
                      "end with the header that opens the assistant's answer");
    command->add_option("--bos-token", options->bos_token,
                        "bos_token's text (default: the model's BOS token, or empty)");
    command->add_option("--eos-token", options->eos_token,
                        "eos_token's text (default: the model's EOS token, or empty)");
    command->add_option("--now", options->now,
                        "the date strftime_now sees, YYYY-MM-DD (default: the local time now)");
    command->callback([options, &exit_code] {
        run_template(*options);
        exit_code = 0;
    });
}

}  // namespace loom::tools
