#pragma once
// Entry points of the subcommands; each returns the process exit code.
#include <span>

namespace loom::tools {

int run_demo(std::span<char *> args);

}  // namespace loom::tools
