// `loom tokenize -m MODEL -p TEXT [--no-bos] [--ids] [--parse-special]`: the tokens of a text, as
// llama-tokenize prints them: "[1, 403, 407]" with --ids, else one "   403 -> ' Once'" per line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "loom/engine.h"
#include "loom/gguf.h"
#include "tools/loom/commands.h"

namespace loom::tools {

namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt;
    bool no_bos = false;
    bool ids_only = false;
    bool parse_special = false;
};

void run_tokenize(const TokenizeOptions &options) {
    const gguf::File file(options.model);
    const engine::Vocab vocab = engine::Vocab::from_gguf(file);
    const std::vector<int32_t> ids =
        vocab.tokenize(options.prompt, !options.no_bos, options.parse_special);
    if (options.ids_only) {
        fmt::print("[{}]\n", fmt::join(ids, ", "));
        return;
    }
    for (const int32_t id : ids) fmt::print("{:6d} -> '{}'\n", id, vocab.token_to_piece(id, true));
}

}  // namespace

void add_tokenize_command(CLI::App &app, int &exit_code) {
    CLI::App *command = app.add_subcommand("tokenize", "print the tokens of a text");
    auto options = std::make_shared<TokenizeOptions>();
    command->add_option("-m,--model", options->model, "the GGUF model file")->required();
    command->add_option("-p,--prompt", options->prompt, "the text")->required();
    command->add_flag("--no-bos", options->no_bos,
                      "add no special tokens: no BOS, EOS, nor BERT's [CLS] ... [SEP]");
    command->add_flag("--ids", options->ids_only, "print only the ids, as a list");
    command->add_flag("--parse-special", options->parse_special,
                      "text such as <s> becomes the control token");
    command->callback([options, &exit_code] {
        run_tokenize(*options);
        exit_code = 0;
    });
}

}  // namespace loom::tools
