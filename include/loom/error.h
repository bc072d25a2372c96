#pragma once
// Errors in three tiers (STYLE.md):
//   a broken invariant        -> LOOM_ASSERT: prints file:line and aborts
//   bad input (shape, file…)  -> throw loom::Error("[module] what is wrong")
//   kernels                   -> never throw; inputs were validated when the graph was built
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace loom {

class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Throws loom::Error with the message "[module] formatted text".
template <typename... Args>
[[noreturn]] void fail(const char *module, fmt::format_string<Args...> format, Args &&...args) {
    throw Error(fmt::format("[{}] ", module) + fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void assert_failed(const char *file, int line, const char *expression);

}  // namespace loom

#define LOOM_ASSERT(x)                                           \
    do {                                                         \
        if (!(x)) ::loom::assert_failed(__FILE__, __LINE__, #x); \
    } while (0)
