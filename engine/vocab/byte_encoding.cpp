#include "engine/vocab/byte_encoding.h"

#include <array>
#include <cstdint>

#include <fmt/format.h>

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
    for (const uint32_t cpt : utf8::decode(text)) {
        if (cpt < map.byte_of_codepoint.size() && map.byte_of_codepoint[cpt] >= 0) {
            out += char(map.byte_of_codepoint[cpt]);
            continue;
        }
        std::string character;
        utf8::append_codepoint(character, cpt);
        out += "[UNK_BYTE_0x";
        for (const char c : character) out += fmt::format("{:02x}", uint8_t(c));
        out.append(text);
        out += "]";
    }
    return out;
}

}  // namespace loom::engine
