#include "engine/vocab/unicode.h"

#include <algorithm>
#include <array>
#include <span>

#include "engine/vocab/unicode_tables.h"

namespace loom::engine::unicode {

namespace {

constexpr uint32_t kEnd = 0x110000;

uint8_t category_from_table(uint32_t cpt) {
    // The last entry whose start is <= cpt; entries are (start << 8) | bits, sorted by start.
    const auto it =
        std::upper_bound(kCategoryRanges.begin(), kCategoryRanges.end(), cpt,
                         [](uint32_t value, uint32_t entry) { return value < entry >> 8; });
    return uint8_t(*(it - 1) & 0xFF);
}

const std::array<uint8_t, 128> &ascii_categories() {
    static const std::array<uint8_t, 128> table = [] {
        std::array<uint8_t, 128> t{};
        for (uint32_t c = 0; c < 128; ++c) t[c] = category_from_table(c);
        return t;
    }();
    return table;
}

}  // namespace

uint8_t category(uint32_t cpt) {
    if (cpt < 128) return ascii_categories()[cpt];
    return cpt < kEnd ? category_from_table(cpt) : uint8_t(kUndefined);
}

bool is_whitespace(uint32_t cpt) {
    if (cpt < 0x80) return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20;
    switch (cpt) {
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return cpt >= 0x2000 && cpt <= 0x200A;
    }
}

uint32_t to_lower(uint32_t cpt) {
    // kLowercase is flat pairs (from, to): search the even positions.
    const size_t n = kLowercase.size() / 2;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (kLowercase[2 * mid] < cpt)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && kLowercase[2 * lo] == cpt ? kLowercase[2 * lo + 1] : cpt;
}

uint32_t decomposition_base(uint32_t cpt) {
    // kNfdRanges is flat triples (first, last, base): the last triple whose first is <= cpt.
    const size_t n = kNfdRanges.size() / 3;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (kNfdRanges[3 * mid] <= cpt)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return cpt;
    const size_t i = 3 * (lo - 1);
    return cpt <= kNfdRanges[i + 1] ? kNfdRanges[i + 2] : cpt;
}

bool is_han(uint32_t cpt) {
    static constexpr std::array<std::array<uint32_t, 2>, 9> kRanges = {{
        {0x4E00, 0x9FFF},    // CJK Unified Ideographs
        {0x3400, 0x4DBF},    // extension A
        {0x20000, 0x2A6DF},  // extension B
        {0x2A700, 0x2B73F},  // extension C
        {0x2B740, 0x2B81F},  // extension D
        {0x2B820, 0x2CEAF},  // extension E
        {0x2CEB0, 0x2EBEF},  // extension F
        {0xF900, 0xFAFF},    // compatibility ideographs
        {0x2F800, 0x2FA1F},  // compatibility ideographs supplement
    }};
    return std::any_of(kRanges.begin(), kRanges.end(),
                       [cpt](const auto &r) { return cpt >= r[0] && cpt <= r[1]; });
}

}  // namespace loom::engine::unicode
