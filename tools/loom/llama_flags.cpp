#include <string>
#include <utility>
#include <vector>

#include "tools/loom/commands.h"

namespace loom::tools {

void accept_llama_cpp_flags(std::vector<std::string> &args) {
    // llama.cpp's multi-letter flags with one dash, which CLI11 reads only with two.
    struct Alias {
        const char *command, *from, *to;
    };
    static const Alias kAliases[] = {{"bench", "-pg", "--pg"},
                                     {"bench", "-ub", "--ubatch-size"},
                                     {"bench", "-fa", "--flash-attn"},
                                     {"bench", "-ctk", "--kv-type"},
                                     {"serve", "-np", "--parallel"}};
    if (args.size() < 2) return;
    for (std::string &arg : args) {
        for (const Alias &a : kAliases) {
            if (args[1] == a.command && arg == a.from) arg = a.to;
        }
    }
}

}  // namespace loom::tools
