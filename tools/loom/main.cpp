// The `loom` command: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>

#include "loom/backend.h"
#include "loom/error.h"
#include "tools/loom/commands.h"

namespace {

struct Command {
    const char *name;
    const char *summary;
    int (*run)(std::span<char *> args);
};

constexpr Command kCommands[] = {
    {"demo", "build and compute a small graph (attention block) and print it",
     loom::tools::run_demo},
};

void print_usage() {
    std::printf("usage: loom <command> [options]\n       loom --list-backends\n\ncommands:\n");
    for (const Command &c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
}

}  // namespace

void list_backends() {
    for (const loom::BackendInfo &b : loom::registered_backends()) {
        std::printf("%-8s %s\n", b.name.c_str(), b.description.c_str());
    }
}

int main(int argc, char **argv) {
    if (argc >= 2 && std::strcmp(argv[1], "--list-backends") == 0) {
        list_backends();
        return 0;
    }
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        print_usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string_view name = argv[1];
    for (const Command &c : kCommands) {
        if (name != c.name) continue;
        try {
            return c.run(std::span<char *>(argv + 2, size_t(argc - 2)));
        } catch (const loom::Error &e) {
            std::fprintf(stderr, "loom %s: error: %s\n", c.name, e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "loom: unknown command '%s'\n", argv[1]);
    print_usage();
    return 2;
}
