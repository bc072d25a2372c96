#!/usr/bin/env python3
"""Copies a GGUF file with tokenizer.chat_template set to a template file's text (the tools' tests
make a model with a template of its own from stories260K, which has none).
Usage: gguf_with_template.py SRC.gguf DST.gguf TEMPLATE.jinja"""
import struct
import sys

SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip_value(data, at, kind):
    if kind in SCALAR_SIZES:
        return at + SCALAR_SIZES[kind]
    if kind == 8:  # string: u64 length, bytes
        (n,) = struct.unpack_from("<Q", data, at)
        return at + 8 + n
    if kind == 9:  # array: u32 element type, u64 count, elements
        element, count = struct.unpack_from("<IQ", data, at)
        at += 12
        for _ in range(count):
            at = skip_value(data, at, element)
        return at
    raise ValueError(f"unknown GGUF value type {kind}")


def string_bytes(text):
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def main():
    src, dst, template = sys.argv[1:4]
    data = open(src, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and version >= 2, "not a GGUF v2/v3 file"
    at, alignment, kvs = 24, 32, []
    for _ in range(n_kv):
        start = at
        (n,) = struct.unpack_from("<Q", data, at)
        key = data[at + 8:at + 8 + n].decode("utf-8")
        at += 8 + n
        (kind,) = struct.unpack_from("<I", data, at)
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", data, at + 4)
        at = skip_value(data, at + 4, kind)
        if key != "tokenizer.chat_template":
            kvs.append(data[start:at])
    infos_start = at
    for _ in range(n_tensors):
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8 + n
        (dims,) = struct.unpack_from("<I", data, at)
        at += 4 + 8 * dims + 4 + 8
    infos = data[infos_start:at]
    data_start = (at + alignment - 1) // alignment * alignment
    text = open(template, encoding="utf-8").read()
    kvs.append(string_bytes("tokenizer.chat_template") + struct.pack("<I", 8) + string_bytes(text))
    head = struct.pack("<4sIQQ", magic, version, n_tensors, len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * ((-len(head)) % alignment)
    open(dst, "wb").write(head + data[data_start:])


if __name__ == "__main__":
    main()
