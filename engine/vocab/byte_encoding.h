#pragma once
// GPT-2's byte-to-unicode map: byte-level BPE vocabularies spell every byte as a printable
// character (0x21..0x7E, 0xA1..0xAC and 0xAE..0xFF as themselves, the other 68 bytes as U+0100
// onwards in byte order), so a space is "Ġ" and a newline "Ċ".
#include <string>
#include <string_view>

namespace loom::engine {

// Each byte of `bytes` as its UTF-8 encoded character.
std::string byte_encode(std::string_view bytes);
// The inverse: each character back to its byte. A character outside the map becomes, as in
// llama.cpp, "[UNK_BYTE_0x" + its UTF-8 in hex + the whole text + "]".
std::string byte_decode(std::string_view text);

}  // namespace loom::engine
