#pragma once
// UTF-8 helpers for the tokenizers. Text is split into characters the way llama.cpp does it:
// by the lead byte alone, so a malformed byte becomes a one-byte character, never an error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::engine::utf8 {

// Bytes in the character a byte starts, judged from its high nibble alone: 1 for ASCII and for a
// stray continuation byte, 2 for 0xC_/0xD_, 3 for 0xE_, 4 for 0xF_.
size_t char_length(uint8_t lead);

// The length of the character at `offset`, cut short at the end of `text`.
inline size_t char_length_at(std::string_view text, size_t offset) {
    const size_t length = char_length(uint8_t(text[offset]));
    return length < text.size() - offset ? length : text.size() - offset;
}

// Returned by decode_at for a malformed sequence.
constexpr uint32_t kMalformed = 0xFFFFFFFF;

// The code point at `offset` as llama.cpp decodes it, and its length in bytes: by the lead byte's
// high bits, with continuation bytes checked but overlong forms, surrogates and values above
// U+10FFFF let through. kMalformed (length 1) for a stray continuation byte, a lead byte 0xF8 or
// above, or a sequence cut short.
uint32_t decode_at(std::string_view text, size_t offset, size_t &length);

// Every code point of `text`; a malformed byte, and a value above U+10FFFF (where llama.cpp
// would throw), becomes U+FFFD.
std::vector<uint32_t> decode(std::string_view text);

void append_codepoint(std::string &out, uint32_t codepoint);

}  // namespace loom::engine::utf8
