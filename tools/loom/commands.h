#pragma once
// The subcommands of `loom`, each in its own file. add_*_command registers a subcommand on the
// app; its callback runs the command and stores the process exit code in `exit_code`. Errors
// are thrown as loom::Error and reported by main.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace loom::tools {

void add_demo_command(CLI::App &app, int &exit_code);
void add_gguf_command(CLI::App &app, int &exit_code);
void add_tokenize_command(CLI::App &app, int &exit_code);
void add_run_command(CLI::App &app, int &exit_code);
void add_logits_command(CLI::App &app, int &exit_code);
void add_quantize_command(CLI::App &app, int &exit_code);
void add_chat_command(CLI::App &app, int &exit_code);
void add_bench_command(CLI::App &app, int &exit_code);
void add_perplexity_command(CLI::App &app, int &exit_code);
void add_serve_command(CLI::App &app, int &exit_code);
void add_template_command(CLI::App &app, int &exit_code);
void add_embed_command(CLI::App &app, int &exit_code);
// Rewrites llama.cpp's one-dash multi-letter flags (llama-bench's -pg, -ub, -fa, -ctk,
// llama-server's -np) in a command line of the matching subcommand.
void accept_llama_cpp_flags(std::vector<std::string> &args);

}  // namespace loom::tools
