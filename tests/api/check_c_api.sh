#!/usr/bin/env bash
# Installs the build's library into a scratch root (make install's component "library":
# libloom.so, loom/loom.h, loom/engine.h and the headers behind it, loom.pc, loom-cpp.pc),
# checks that the library exports the C ABI and namespace loom and nothing else, builds
# tests/api/c_api_test.c and cpp_api_test.cpp against the installed files as a user would
# (`pkg-config --cflags --libs loom` / `loom-cpp`) and runs them on the stories260K fixture.
# usage: check_c_api.sh BUILD_DIR [EXTRA_CFLAGS (the sanitizers the library was built with)]
set -euo pipefail
build=$(cd "$1" && pwd)
extra=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
fixture="$here/../../../shared/fixtures/stories260K"
[ -f "$fixture/case.json" ] || { echo "missing $fixture: the tests need ../shared beside the repository" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage" cmake --install "$build" --component library >/dev/null
libdir=$(find "$stage" -name 'libloom.so' -printf '%h\n' | head -1)
[ -n "$libdir" ] || { echo "make install put no libloom.so under $stage" >&2; exit 1; }
prefix=$(cd "$libdir/pkgconfig/$(sed -n 's|^prefix=${pcfiledir}/||p' "$libdir/pkgconfig/loom.pc")" && pwd)
for f in "$prefix/include/loom/loom.h" "$prefix/include/loom/engine.h" "$libdir/pkgconfig/loom-cpp.pc"; do
    [ -e "$f" ] || { echo "make install did not install $f" >&2; exit 1; }
done

others=$(nm -D --defined-only -C "$libdir/libloom.so" | cut -d' ' -f3- |
    grep -vE '^(loom_|loom::|(typeinfo|typeinfo name|vtable|VTT) for loom::)' || true)
if [ -n "$others" ]; then
    echo "libloom.so exports more than loom_* and namespace loom:" >&2
    echo "$others" | head >&2
    exit 1
fi

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror -pedantic $extra $(pkg-config --cflags loom) "$here/c_api_test.c" \
    -o "$stage/c_api_test" $(pkg-config --libs loom) -lm
# The header compiles as C++ too.
printf '#include <loom/loom.h>\nint main() { return loom_abi_version() == LOOM_ABI_VERSION ? 0 : 1; }\n' \
    > "$stage/cxx.cpp"
c++ -std=c++20 -Wall -Wextra -Werror $extra $(pkg-config --cflags loom) "$stage/cxx.cpp" -o "$stage/cxx" \
    $(pkg-config --libs loom)
LD_LIBRARY_PATH="$libdir" "$stage/cxx"

# The C++ API: engine.h and what it includes, from the installed tree only.
c++ -std=c++20 -Wall -Wextra -Werror $extra $(pkg-config --cflags loom-cpp) "$here/cpp_api_test.cpp" \
    -o "$stage/cpp_api_test" $(pkg-config --libs loom-cpp)

args=$(python3 - "$fixture/case.json" <<'PY'
import json, shlex, sys
c = json.load(open(sys.argv[1]))
ids = lambda v: ",".join(map(str, v))
print(shlex.join([c["prompt_text"], ids(c["tokens"]), ids(c["greedy"]["tokens"]), c["greedy"]["text"]]))
PY
)
eval "set -- $args"
LD_LIBRARY_PATH="$libdir" "$stage/cpp_api_test" "$fixture/../../models/stories260K.gguf" "$1" "$2" "$3"
LD_LIBRARY_PATH="$libdir" "$stage/c_api_test" "$fixture/../../models/stories260K.gguf" \
    "$fixture/logits.f32" "$1" "$2" "$3" "$4" "$stage"
