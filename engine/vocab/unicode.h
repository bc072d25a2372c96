#pragma once
// Unicode facts for the tokenizers, exactly as llama.cpp has them (its tables, Unicode 15.1):
// general category, White_Space, simple lowercase, the base letter of a decomposition.
#include <cstdint>

namespace loom::engine::unicode {

// One bit per general category group, as in llama.cpp's unicode_cpt_flags.
enum Category : uint8_t {
    kUndefined = 0x01,    // Cn, and every value above U+10FFFF
    kNumber = 0x02,       // \p{N}
    kLetter = 0x04,       // \p{L}
    kSeparator = 0x08,    // \p{Z}
    kMark = 0x10,         // \p{M}
    kPunctuation = 0x20,  // \p{P}
    kSymbol = 0x40,       // \p{S}
    kControl = 0x80,      // \p{C} but Cn: Cc, Cf, Co, Cs
};

uint8_t category(uint32_t cpt);
// The 25 code points of the White_Space property.
bool is_whitespace(uint32_t cpt);
uint32_t to_lower(uint32_t cpt);
// The first code point of the canonical decomposition ("é" -> "e"), or the code point itself.
uint32_t decomposition_base(uint32_t cpt);
// CJK ideograph blocks (unified, extensions A-F, compatibility), llama.cpp's \p{Han} of Kimi K2.
bool is_han(uint32_t cpt);

}  // namespace loom::engine::unicode
