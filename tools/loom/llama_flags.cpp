#include <string>
#include <utility>
#include <vector>

#include "tools/loom/commands.h"

namespace loom::tools {

void accept_llama_cpp_flags(std::vector<std::string> &args) {
    // llama.cpp's multi-letter flags with one dash, which CLI11 reads only with two.
    struct Alias {
        const char *command, *from, *to;  // command null: every command
    };
    static const Alias kAliases[] = {{"bench", "-pg", "--pg"},
                                     {"bench", "-ub", "--ubatch-size"},
                                     {"bench", "-fa", "--flash-attn"},
                                     {nullptr, "-ctk", "--cache-type-k"},
                                     {nullptr, "-ctv", "--cache-type-v"},
                                     {"serve", "-np", "--parallel"}};
    if (args.size() < 2) return;
    for (std::string &arg : args) {
        for (const Alias &a : kAliases) {
            if ((a.command == nullptr || args[1] == a.command) && arg == a.from) arg = a.to;
        }
    }
}

}  // namespace loom::tools
