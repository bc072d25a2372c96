#!/usr/bin/env python3
"""Writes engine/vocab/unicode_tables.cpp and unicode_nfd_table.cpp: the Unicode facts the
tokenizers need (general category per code point range, simple lowercase mapping, the first code
point of each canonical decomposition), taken from llama.cpp's src/unicode-data.cpp so that Loom
classifies every code point exactly as llama.cpp does (its tables are Unicode 15.1, generated from
UnicodeData.txt by llama.cpp's scripts/gen-unicode-data.py).

Usage: gen_unicode_tables.py LLAMA_CPP/src/unicode-data.cpp   (then `make format`)"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def table(source, name):
    body = re.search(name + r"\s*=\s*\{(.*?)\n\};", source, re.S).group(1)
    return [tuple(int(v, 16) for v in re.findall(r"0x[0-9A-Fa-f]+", row))
            for row in re.findall(r"\{([^{}]*)\}", body)]


def numbers(values):
    return "\n".join(", ".join(values[i:i + 8]) + "," for i in range(0, len(values), 8))


HEADER = "// Generated from llama.cpp's src/unicode-data.cpp by gen_unicode_tables.py; do not edit.\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source = open(sys.argv[1], encoding="utf-8").read()
    ranges = table(source, "unicode_ranges_flags")
    assert ranges[0][0] == 0 and ranges[-1][0] == 0x110000
    assert all(flags <= 0xFF for _, flags in ranges)
    lower = table(source, "unicode_map_lowercase")
    nfd = table(source, "unicode_ranges_nfd")
    assert lower == sorted(lower) and nfd == sorted(nfd)

    with open(os.path.join(HERE, "unicode_tables.cpp"), "w") as out:
        out.write(HEADER + '#include "engine/vocab/unicode_tables.h"\n\nnamespace loom::engine::unicode {\n\n')
        out.write("// (first code point << 8) | category bits; a range runs to the next entry's start.\n")
        out.write("const uint32_t kCategoryRangeData[] = {\n")
        out.write(numbers([f"0x{start << 8 | flags:X}" for start, flags in ranges]) + "\n};\n")
        out.write("const std::span<const uint32_t> kCategoryRanges(kCategoryRangeData);\n\n")
        out.write("// Pairs (code point, its lowercase), sorted.\n")
        out.write("const uint32_t kLowercaseData[] = {\n")
        out.write(numbers([f"0x{v:X}" for pair in lower for v in pair]) + "\n};\n")
        out.write("const std::span<const uint32_t> kLowercase(kLowercaseData);\n\n")
        out.write("}  // namespace loom::engine::unicode\n")

    with open(os.path.join(HERE, "unicode_nfd_table.cpp"), "w") as out:
        out.write(HEADER + '#include "engine/vocab/unicode_tables.h"\n\nnamespace loom::engine::unicode {\n\n')
        out.write("// Triples (first, last, first code point of the decomposition), sorted.\n")
        out.write("const uint32_t kNfdRangeData[] = {\n")
        out.write(numbers([f"0x{v:X}" for row in nfd for v in row]) + "\n};\n")
        out.write("const std::span<const uint32_t> kNfdRanges(kNfdRangeData);\n\n")
        out.write("}  // namespace loom::engine::unicode\n")
    print(f"{len(ranges)} category ranges, {len(lower)} lowercase pairs, {len(nfd)} decomposition ranges")


if __name__ == "__main__":
    main()
