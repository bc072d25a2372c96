#pragma once
// The subcommands of `loom`, each in its own file. add_*_command registers a subcommand on the
// app; its callback runs the command and stores the process exit code in `exit_code`. Errors
// are thrown as loom::Error and reported by main.
namespace CLI {
class App;
}

namespace loom::tools {

void add_demo_command(CLI::App &app, int &exit_code);
void add_gguf_command(CLI::App &app, int &exit_code);
void add_tokenize_command(CLI::App &app, int &exit_code);
void add_run_command(CLI::App &app, int &exit_code);
void add_logits_command(CLI::App &app, int &exit_code);

}  // namespace loom::tools
