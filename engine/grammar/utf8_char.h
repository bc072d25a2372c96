#pragma once
// One character of UTF-8, strictly: overlong forms, surrogates and values past U+10FFFF are
// malformed, since a grammar's character classes are about code points and "\xC1\xBB" must not
// pass for "{". (engine/vocab/utf8.h is lenient on purpose, as llama.cpp's tokenizers are.)
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loom::engine::grammar {

enum class Utf8 { whole, cut, malformed };

// The character at `text[i]`: whole, with its code point in lo = hi and its length; cut by the
// end of `text`, with the code points it could still become in [lo, hi] and the bytes present
// in `length`; or malformed.
Utf8 decode_char(std::string_view text, size_t i, uint32_t &lo, uint32_t &hi, size_t &length);

}  // namespace loom::engine::grammar
