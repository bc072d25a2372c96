#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what the committed .clang-format makes of it.
set -euo pipefail
cd "$1"
files=$(git ls-files '*.cpp' '*.h' 2>/dev/null || find . -name '*.cpp' -o -name '*.h')
[ -z "$files" ] && { echo "no C++ files found"; exit 1; }
bad=()
for f in $files; do
    [ -f "$f" ] || continue
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "not formatted (run 'make format'):"; printf '  %s\n' "${bad[@]}"; exit 1
fi
echo "$(echo "$files" | wc -w) files formatted"
