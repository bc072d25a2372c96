#include <cstdio>
#include <cstdlib>

#include "loom/error.h"

namespace loom {

void assert_failed(const char *file, int line, const char *expression) {
    std::fprintf(stderr, "%s:%d: LOOM_ASSERT(%s) failed\n", file, line, expression);
    std::fflush(stderr);
    std::abort();
}

}  // namespace loom
