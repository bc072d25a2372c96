#!/usr/bin/env bash
# Fails on any tracked source file longer than the hard limit (STYLE.md: soft 800, hard 1,500).
set -euo pipefail
cd "$1"
limit="$2"
files=$(git ls-files '*.cpp' '*.h' '*.def' 2>/dev/null || find . -name '*.cpp' -o -name '*.h')
over=$(for f in $files; do [ -f "$f" ] && n=$(wc -l <"$f") && [ "$n" -gt "$limit" ] && echo "  $f: $n lines"; done || true)
if [ -n "$over" ]; then echo "files over $limit lines:"; echo "$over"; exit 1; fi
echo "$(echo "$files" | wc -w) files within $limit lines"
