// libFuzzer target: fuzz/targets.h, sequence_state_one_input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz/targets.h"

// The model comes from ../shared/models beside the repository (LOOM_ROOT overrides where the
// repository is; the default is the working directory, as `make fuzz` runs).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const auto base = loom::fuzz::load_state_base(
        std::getenv("LOOM_ROOT") != nullptr ? std::getenv("LOOM_ROOT") : ".");
    loom::fuzz::sequence_state_one_input(*base, data, size);
    return 0;
}
