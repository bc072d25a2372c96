#include "engine/vocab/utf8.h"

namespace loom::engine::utf8 {

size_t char_length(uint8_t lead) {
    static constexpr uint8_t kLengthByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                        1, 1, 1, 1, 2, 2, 3, 4};
    return kLengthByHighNibble[lead >> 4];
}

namespace {

// The length of the well-formed sequence at `offset`, or 0 when it is malformed: overlong,
// a surrogate, above U+10FFFF, truncated or with a bad continuation byte.
size_t valid_sequence_length(std::string_view text, size_t offset) {
    const uint8_t lead = uint8_t(text[offset]);
    if (lead < 0x80) return 1;
    size_t length = 0;
    uint32_t codepoint = 0;
    uint32_t smallest = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2, codepoint = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, codepoint = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, codepoint = lead & 0x07, smallest = 0x10000;
    } else {
        return 0;
    }
    if (offset + length > text.size()) return 0;
    for (size_t i = 1; i < length; ++i) {
        const uint8_t next = uint8_t(text[offset + i]);
        if ((next & 0xC0) != 0x80) return 0;
        codepoint = (codepoint << 6) | (next & 0x3F);
    }
    const bool surrogate = codepoint >= 0xD800 && codepoint <= 0xDFFF;
    if (codepoint < smallest || surrogate || codepoint > 0x10FFFF) return 0;
    return length;
}

}  // namespace

std::string replace_invalid(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) {
        const size_t length = valid_sequence_length(text, offset);
        if (length == 0) {
            out += "\xEF\xBF\xBD";
            offset += 1;
        } else {
            out.append(text.substr(offset, length));
            offset += length;
        }
    }
    return out;
}

void append_codepoint(std::string &out, uint32_t codepoint) {
    if (codepoint < 0x80) {
        out += char(codepoint);
    } else if (codepoint < 0x800) {
        out += char(0xC0 | (codepoint >> 6));
        out += char(0x80 | (codepoint & 0x3F));
    } else if (codepoint < 0x10000) {
        out += char(0xE0 | (codepoint >> 12));
        out += char(0x80 | ((codepoint >> 6) & 0x3F));
        out += char(0x80 | (codepoint & 0x3F));
    } else {
        out += char(0xF0 | (codepoint >> 18));
        out += char(0x80 | ((codepoint >> 12) & 0x3F));
        out += char(0x80 | ((codepoint >> 6) & 0x3F));
        out += char(0x80 | (codepoint & 0x3F));
    }
}

}  // namespace loom::engine::utf8
