// `loom gguf dump FILE [--json]`: describes a GGUF file (header, metadata, tensor table).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "loom/gguf.h"
#include "tools/loom/commands.h"

namespace loom::tools {

void add_gguf_command(CLI::App &app, int &exit_code) {
    CLI::App *gguf = app.add_subcommand("gguf", "inspect GGUF model files");
    gguf->require_subcommand(1);

    CLI::App *dump = gguf->add_subcommand(
        "dump", "print the header, every metadata key with its type and value, and the tensors");
    auto path = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    dump->add_option("file", *path, "the GGUF file")->required();
    dump->add_flag("--json", *as_json, "one JSON object, every value in full");
    dump->callback([path, as_json, &exit_code] {
        const gguf::File file(*path);
        const std::string text =
            *as_json ? gguf::format_json(file.contents()) : gguf::format_text(file.contents());
        std::fwrite(text.data(), 1, text.size(), stdout);
        exit_code = 0;
    });
}

}  // namespace loom::tools
