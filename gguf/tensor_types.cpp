// GGUF tensor type ids: the map to Loom's DTypes (through the traits table) and GGUF's names.
#include <array>

#include "loom/gguf.h"

namespace loom::gguf {
namespace {

// ggml_type names by id, as GGUF files number them. Ids 4, 5, 31-33 and 36-38 belonged to
// formats since removed from ggml; files with them exist but no current tool reads them.
constexpr std::array<const char *, 40> kGgufTypeNames = {
    "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
    "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
    "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
    "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
    "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
    "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
};

}  // namespace

std::optional<DType> dtype_from_gguf_id(uint32_t gguf_id) {
    for (int i = 0; i < kDTypeCount; ++i) {
        if (traits(DType(i)).gguf_id == gguf_id) return DType(i);
    }
    return std::nullopt;
}

const char *gguf_type_name(uint32_t gguf_id) {
    return gguf_id < kGgufTypeNames.size() ? kGgufTypeNames[gguf_id] : nullptr;
}

}  // namespace loom::gguf
