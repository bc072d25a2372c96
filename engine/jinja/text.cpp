#include "engine/jinja/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace loom::engine::jinja {

CodePoint decode_code_point(std::string_view s, size_t at) {
    const auto c = static_cast<unsigned char>(s[at]);
    const size_t len = c < 0x80                ? 1
                       : c >= 0xC2 && c < 0xE0 ? 2
                       : c >= 0xE0 && c < 0xF0 ? 3
                       : c >= 0xF0 && c < 0xF5 ? 4
                                               : 0;
    if (len <= 1 || at + len > s.size()) return {c, 1};
    uint32_t cp = c & (0xFF >> (len + 1));
    for (size_t k = 1; k < len; ++k) {
        const auto cc = static_cast<unsigned char>(s[at + k]);
        if ((cc & 0xC0) != 0x80) return {c, 1};
        cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are ill-formed.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {c, 1};
    return {cp, len};
}

void append_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

bool is_ascii(std::string_view s) {
    for (const char c : s) {
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
    std::vector<size_t> at;
    at.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size(); i += decode_code_point(s, i).length) at.push_back(i);
    at.push_back(s.size());
    return at;
}

size_t code_point_count(std::string_view s) {
    if (is_ascii(s)) return s.size();
    size_t n = 0;
    for (size_t i = 0; i < s.size(); i += decode_code_point(s, i).length) ++n;
    return n;
}

bool is_space(uint32_t c) {
    // str.isspace(): ASCII \t \n \v \f \r, the separators \x1c-\x1f, space, and Unicode's
    // spaces and line/paragraph separators.
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string strip(std::string_view s, const std::string *chars, bool left, bool right) {
    std::vector<uint32_t> set;
    if (chars != nullptr) {
        for (size_t i = 0; i < chars->size();) {
            const CodePoint cp = decode_code_point(*chars, i);
            set.push_back(cp.value);
            i += cp.length;
        }
    }
    const auto strippable = [&](uint32_t c) {
        if (chars == nullptr) return is_space(c);
        for (const uint32_t x : set) {
            if (x == c) return true;
        }
        return false;
    };
    const std::vector<size_t> at = code_point_offsets(s);
    size_t first = 0, last = at.size() - 1;  // code point indexes [first, last)
    if (left) {
        while (first < last && strippable(decode_code_point(s, at[first]).value)) ++first;
    }
    if (right) {
        while (last > first && strippable(decode_code_point(s, at[last - 1]).value)) --last;
    }
    return std::string(s.substr(at[first], at[last] - at[first]));
}

namespace {

// The simple one-to-one case pairs of Latin-1, Latin Extended-A, Greek and Cyrillic; other code
// points have no case here.
uint32_t upper_of(uint32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c < 0x80) return c;
    if ((c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) ||
        (c >= 0x430 && c <= 0x44F)) {
        return c - 32;
    }
    if (c == 0xFF) return 0x178;
    if (c == 0x3C2) return 0x3A3;  // final sigma
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c & ~1u;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
    return c;
}

uint32_t lower_of(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80) return c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) ||
        (c >= 0x410 && c <= 0x42F)) {
        return c + 32;
    }
    if (c == 0x178) return 0xFF;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c | 1u;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
    return c;
}

bool is_cased(uint32_t c) {
    return upper_of(c) != c || lower_of(c) != c;
}

template <typename Map>
std::string map_code_points(std::string_view s, Map map) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        // An ill-formed byte is copied as it is, not re-encoded.
        if (cp.length == 1 && cp.value >= 0x80) {
            out += s[i];
        } else {
            append_utf8(out, map(cp.value, i));
        }
        i += cp.length;
    }
    return out;
}

}  // namespace

std::string to_upper(std::string_view s) {
    return map_code_points(s, [](uint32_t c, size_t) { return upper_of(c); });
}

std::string to_lower(std::string_view s) {
    return map_code_points(s, [](uint32_t c, size_t) { return lower_of(c); });
}

std::string to_title(std::string_view s) {
    bool previous_cased = false;
    return map_code_points(s, [&](uint32_t c, size_t) {
        const bool cased = is_cased(c);
        const uint32_t out = !cased ? c : previous_cased ? lower_of(c) : upper_of(c);
        previous_cased = cased;
        return out;
    });
}

std::string capitalize(std::string_view s) {
    return map_code_points(
        s, [](uint32_t c, size_t at) { return at == 0 ? upper_of(c) : lower_of(c); });
}

std::vector<std::string> split(std::string_view s, const std::string *sep, int64_t max_split,
                               bool from_right) {
    std::vector<std::string> parts;
    if (sep == nullptr) {
        // Runs of whitespace separate; leading and trailing whitespace make no empty parts.
        const std::vector<size_t> at = code_point_offsets(s);
        const size_t n = at.size() - 1;
        const auto space = [&](size_t i) { return is_space(decode_code_point(s, at[i]).value); };
        if (!from_right) {
            size_t i = 0;
            while (true) {
                while (i < n && space(i)) ++i;
                if (i == n) break;
                if (max_split >= 0 && int64_t(parts.size()) == max_split) {
                    size_t end = n;
                    while (end > i && space(end - 1)) --end;
                    parts.emplace_back(s.substr(at[i], at[end] - at[i]));
                    break;
                }
                size_t j = i;
                while (j < n && !space(j)) ++j;
                parts.emplace_back(s.substr(at[i], at[j] - at[i]));
                i = j;
            }
        } else {
            size_t i = n;
            while (true) {
                while (i > 0 && space(i - 1)) --i;
                if (i == 0) break;
                if (max_split >= 0 && int64_t(parts.size()) == max_split) {
                    size_t begin = 0;
                    while (begin < i && space(begin)) ++begin;
                    parts.emplace_back(s.substr(at[begin], at[i] - at[begin]));
                    break;
                }
                size_t j = i;
                while (j > 0 && !space(j - 1)) --j;
                parts.emplace_back(s.substr(at[j], at[i] - at[j]));
                i = j;
            }
            std::reverse(parts.begin(), parts.end());
        }
        return parts;
    }
    if (sep->empty()) throw std::invalid_argument("empty separator");
    if (!from_right) {
        size_t at = 0;
        while (max_split < 0 || int64_t(parts.size()) < max_split) {
            const size_t hit = s.find(*sep, at);
            if (hit == std::string_view::npos) break;
            parts.emplace_back(s.substr(at, hit - at));
            at = hit + sep->size();
        }
        parts.emplace_back(s.substr(at));
    } else {
        size_t end = s.size();
        while (max_split < 0 || int64_t(parts.size()) < max_split) {
            if (end < sep->size()) break;
            const size_t hit = s.rfind(*sep, end - sep->size());
            if (hit == std::string_view::npos) break;
            parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
            end = hit;
        }
        parts.emplace_back(s.substr(0, end));
        std::reverse(parts.begin(), parts.end());
    }
    return parts;
}

std::string replace(std::string_view s, std::string_view old, std::string_view replacement,
                    int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement before every code point and at the end.
        const std::vector<size_t> at = code_point_offsets(s);
        int64_t done = 0;
        for (size_t i = 0; i + 1 < at.size(); ++i) {
            if (count < 0 || done < count) {
                out += replacement;
                ++done;
            }
            out += s.substr(at[i], at[i + 1] - at[i]);
        }
        if (count < 0 || done < count) out += replacement;
        return out;
    }
    size_t at = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        const size_t hit = s.find(old, at);
        if (hit == std::string_view::npos) break;
        out += s.substr(at, hit - at);
        out += replacement;
        at = hit + old.size();
    }
    out += s.substr(at);
    return out;
}

std::string float_repr(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
    // The shortest digits that read back as x, as d.ddde±X; Python's repr lays them out fixed
    // when the decimal exponent is in [-4, 16), else in exponent form.
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
    const std::string_view sci(buf, size_t(result.ptr - buf));
    const size_t e = sci.find('e');
    std::string digits;
    for (const char c : sci.substr(0, e)) {
        if (c >= '0' && c <= '9') digits += c;
    }
    const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
    const std::string sign = x < 0 ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
        std::string mantissa = digits.substr(0, 1);
        if (digits.size() > 1) mantissa += "." + digits.substr(1);
        return fmt::format("{}{}e{}{:02d}", sign, mantissa, exponent < 0 ? '-' : '+',
                           std::abs(exponent));
    }
    std::string out;
    if (exponent < 0) {
        out = "0." + std::string(size_t(-exponent - 1), '0') + digits;
    } else if (size_t(exponent) + 1 >= digits.size()) {
        out = digits + std::string(size_t(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
        out = digits.substr(0, size_t(exponent) + 1) + "." + digits.substr(size_t(exponent) + 1);
    }
    return sign + out;
}

std::string string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        const uint32_t c = cp.value;
        if (c == uint32_t(quote) || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0)) {
            // An ill-formed byte is shown as Python shows a surrogate escape.
            out += cp.length == 1 && c >= 0x80 ? fmt::format("\\udc{:02x}", c)
                                               : fmt::format("\\x{:02x}", c);
        } else if (c == 0xAD || c == 0x2028 || c == 0x2029 || (c >= 0x200B && c <= 0x200F)) {
            out += fmt::format("\\u{:04x}", c);  // not printable (str.isprintable)
        } else {
            out += s.substr(i, cp.length);
        }
        i += cp.length;
    }
    out += quote;
    return out;
}

}  // namespace loom::engine::jinja
