#include "engine/grammar/utf8_char.h"

#include <algorithm>

namespace loom::engine::grammar {

Utf8 decode_char(std::string_view text, size_t i, uint32_t &lo, uint32_t &hi, size_t &length) {
    const auto lead = uint8_t(text[i]);
    const size_t need = lead < 0x80       ? 1
                        : lead >> 5 == 6  ? 2
                        : lead >> 4 == 14 ? 3
                        : lead >> 3 == 30 ? 4
                                          : 0;
    if (need == 0) return Utf8::malformed;
    // The least code point of each length: below it the form is overlong.
    constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t c = need == 1 ? lead : lead & (0x7Fu >> need);
    size_t k = 1;
    for (; k < need && i + k < text.size(); ++k) {
        const auto next = uint8_t(text[i + k]);
        if ((next & 0xC0) != 0x80) return Utf8::malformed;
        c = c << 6 | (next & 0x3F);
    }
    const auto missing = uint32_t(6 * (need - k));
    lo = std::max(c << missing, kLeast[need]);
    hi = std::min((c << missing) | ((uint32_t(1) << missing) - 1), uint32_t(0x10FFFF));
    length = k;
    if (lo > hi) return Utf8::malformed;
    if (k < need) {
        // Surrogates excluded only where the whole range is them.
        if (lo >= 0xD800 && hi <= 0xDFFF) return Utf8::malformed;
        return Utf8::cut;
    }
    if (c >= 0xD800 && c <= 0xDFFF) return Utf8::malformed;
    return Utf8::whole;
}

}  // namespace loom::engine::grammar
