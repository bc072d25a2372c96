#include "engine/vocab/utf8.h"

namespace loom::engine::utf8 {

size_t char_length(uint8_t lead) {
    static constexpr uint8_t kLengthByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                        1, 1, 1, 1, 2, 2, 3, 4};
    return kLengthByHighNibble[lead >> 4];
}

uint32_t decode_at(std::string_view text, size_t offset, size_t &length) {
    const uint8_t lead = uint8_t(text[offset]);
    length = 1;
    if (lead < 0x80) return lead;
    if (lead < 0xC0 || lead >= 0xF8) return kMalformed;
    const size_t size = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    if (offset + size > text.size()) return kMalformed;
    uint32_t cpt = lead & (0x7F >> size);
    for (size_t i = 1; i < size; ++i) {
        const uint8_t next = uint8_t(text[offset + i]);
        if ((next & 0xC0) != 0x80) return kMalformed;
        cpt = (cpt << 6) | (next & 0x3F);
    }
    length = size;
    return cpt;
}

std::vector<uint32_t> decode(std::string_view text) {
    std::vector<uint32_t> cpts;
    cpts.reserve(text.size());
    for (size_t offset = 0, length = 0; offset < text.size(); offset += length) {
        const uint32_t cpt = decode_at(text, offset, length);
        cpts.push_back(cpt <= 0x10FFFF ? cpt : 0xFFFD);
    }
    return cpts;
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
