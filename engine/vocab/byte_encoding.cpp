#include "engine/vocab/byte_encoding.h"

#include <array>
#include <cstdint>

#include "engine/vocab/utf8.h"

namespace loom::engine {

namespace {

bool printable(int byte) {
    return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
}

struct ByteMap {
    std::array<uint16_t, 256> codepoint_of_byte{};
    std::array<int16_t, 512> byte_of_codepoint{};  // -1 where no byte maps here; all are < 0x144

    ByteMap() {
        byte_of_codepoint.fill(-1);
        uint16_t next_unprintable = 0x100;
        for (int byte = 0; byte < 256; ++byte) {
            const uint16_t codepoint = printable(byte) ? uint16_t(byte) : next_unprintable++;
            codepoint_of_byte[byte] = codepoint;
            byte_of_codepoint[codepoint] = int16_t(byte);
        }
    }
};

const ByteMap &byte_map() {
    static const ByteMap map;
    return map;
}

// The code point of a one- or two-byte character (every code point of the map is below U+0144),
// or -1 for a longer one.
int32_t small_codepoint(std::string_view text) {
    const uint8_t lead = uint8_t(text[0]);
    if (lead < 0x80) return lead;
    if ((lead & 0xE0) == 0xC0 && text.size() == 2) return ((lead & 0x1F) << 6) | (text[1] & 0x3F);
    return -1;
}

}  // namespace

std::string byte_encode(std::string_view bytes) {
    const ByteMap &map = byte_map();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char byte : bytes) utf8::append_codepoint(out, map.codepoint_of_byte[uint8_t(byte)]);
    return out;
}

std::string byte_decode(std::string_view text) {
    const ByteMap &map = byte_map();
    std::string out;
    out.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) {
        const size_t length = utf8::char_length_at(text, offset);
        const std::string_view character = text.substr(offset, length);
        const int32_t codepoint = small_codepoint(character);
        const bool mapped = codepoint >= 0 && codepoint < int32_t(map.byte_of_codepoint.size()) &&
                            map.byte_of_codepoint[codepoint] >= 0;
        if (mapped) {
            out += char(map.byte_of_codepoint[codepoint]);
        } else {
            out.append(character);
        }
        offset += length;
    }
    return out;
}

}  // namespace loom::engine
