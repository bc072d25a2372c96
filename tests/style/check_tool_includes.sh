#!/usr/bin/env bash
# The tools use the engine only through its public header (include/loom/engine.h): fails on any
# file under tools/ that includes an engine/ header directly.
set -euo pipefail
cd "$1"
files=$(git ls-files 'tools/*' | grep -E '\.(cpp|h)$' || true)
hits=$(for f in $files; do [ -f "$f" ] && grep -nHE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]engine/' "$f"; done || true)
if [ -n "$hits" ]; then echo "tools/ including engine internals (use loom/engine.h):"; echo "$hits"; exit 1; fi
echo "tools/ reach the engine through loom/engine.h only ($(echo "$files" | wc -w) files)"
