#pragma once
// UTF-8 helpers for the tokenizers. Text is split into characters the way llama.cpp does it:
// by the lead byte alone, so a malformed byte becomes a one-byte character, never an error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom::engine::utf8 {

// Bytes in the character a byte starts, judged from its high nibble alone: 1 for ASCII and for a
// stray continuation byte, 2 for 0xC_/0xD_, 3 for 0xE_, 4 for 0xF_.
size_t char_length(uint8_t lead);

// The length of the character at `offset`, cut short at the end of `text`.
inline size_t char_length_at(std::string_view text, size_t offset) {
    const size_t length = char_length(uint8_t(text[offset]));
    return length < text.size() - offset ? length : text.size() - offset;
}

// `text` with every byte that does not belong to a well-formed sequence replaced by U+FFFD, as
// llama.cpp decodes text before its byte-level pre-tokenizer (which needs valid UTF-8).
std::string replace_invalid(std::string_view text);

void append_codepoint(std::string &out, uint32_t codepoint);

}  // namespace loom::engine::utf8
