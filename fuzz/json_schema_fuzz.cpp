// libFuzzer target: fuzz/targets.h, json_schema_one_input.
#include <cstddef>
#include <cstdint>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    loom::fuzz::json_schema_one_input(data, size);
    return 0;
}
