// The `loom` command: one binary, one subcommand per job (tools/loom/commands.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "loom/backend.h"
#include "loom/cpu.h"
#include "loom/error.h"
#include "tools/loom/commands.h"

namespace {

void list_backends() {
    for (const loom::BackendInfo &b : loom::registered_backends()) {
        std::printf("%-8s %s\n", b.name.c_str(), b.description.c_str());
    }
}

// The subcommand that ran ("gguf"), which errors are reported under.
std::string command_name(const CLI::App &app) {
    const auto subcommands = app.get_subcommands();
    return subcommands.empty() ? std::string() : subcommands.front()->get_name();
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"Loom runs large language models from GGUF files.", "loom"};
    bool show_backends = false;
    app.add_flag("--list-backends", show_backends, "list the compute backends and exit");
    app.add_flag_callback(
        "--version",
        [] {
            std::printf("loom %s\nkernels: %s\n", LOOM_BUILD_COMMIT,
                        loom::cpu_kernels_description().c_str());
            throw CLI::Success();
        },
        "print the build and the CPU kernels in use, and exit");
    app.require_subcommand(0, 1);
    int exit_code = 0;
    loom::tools::add_demo_command(app, exit_code);
    loom::tools::add_gguf_command(app, exit_code);
    loom::tools::add_tokenize_command(app, exit_code);
    loom::tools::add_run_command(app, exit_code);
    loom::tools::add_logits_command(app, exit_code);
    loom::tools::add_quantize_command(app, exit_code);
    loom::tools::add_chat_command(app, exit_code);
    loom::tools::add_bench_command(app, exit_code);
    loom::tools::add_perplexity_command(app, exit_code);
    loom::tools::add_serve_command(app, exit_code);
    loom::tools::add_template_command(app, exit_code);
    loom::tools::add_embed_command(app, exit_code);

    std::vector<std::string> args(argv, argv + argc);
    loom::tools::accept_llama_cpp_flags(args);
    args.erase(args.begin());                // CLI11 takes the arguments without the program
    std::reverse(args.begin(), args.end());  // name, in reverse order
    try {
        app.parse(args);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    } catch (const loom::Error &e) {
        std::fprintf(stderr, "loom %s: error: %s\n", command_name(app).c_str(), e.what());
        return 1;
    }
    if (show_backends) {
        list_backends();
        return 0;
    }
    if (app.get_subcommands().empty()) {
        std::fputs(app.help().c_str(), stderr);
        return 2;
    }
    return exit_code;
}
