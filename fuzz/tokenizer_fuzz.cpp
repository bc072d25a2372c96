// libFuzzer target: fuzz/targets.h, tokenizer_one_input.
#include <cstddef>
#include <cstdint>

#include <cstdlib>
#include "fuzz/targets.h"

// The vocabularies come from ../shared/models/vocab beside the repository (LOOM_ROOT overrides
// where the repository is; the default is the working directory, as `make fuzz` runs).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const auto vocabs = loom::fuzz::load_vocabularies(
        std::getenv("LOOM_ROOT") != nullptr ? std::getenv("LOOM_ROOT") : ".");
    loom::fuzz::tokenizer_one_input(vocabs, data, size);
    return 0;
}
