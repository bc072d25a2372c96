#!/usr/bin/env bash
# Architecture-specific code lives in engine/models/ (one file per architecture, registered in
# archs.def); shared code asks the descriptor. Fails on any comparison of an architecture name
# elsewhere, like `hp.arch == "llama"` or `arch.name != ...`.
set -euo pipefail
cd "$1"
files=$(git ls-files 'core/*' 'engine/*' 'gguf/*' 'tools/*' | grep -E '\.(cpp|h)$' | grep -v '^engine/models/' || true)
hits=$(for f in $files; do [ -f "$f" ] && grep -nHE '\barch[a-z_]*(\(\))?(\.|->)?(name)?[[:space:]]*[!=]=' "$f" | grep -v nullptr; done || true)
if [ -n "$hits" ]; then echo "architecture branches outside engine/models/:"; echo "$hits"; exit 1; fi
echo "no architecture branches outside engine/models/ ($(echo "$files" | wc -w) files)"
