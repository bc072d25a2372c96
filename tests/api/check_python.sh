#!/usr/bin/env bash
# The Python module as a user installs it: `pip install ./python` into a fresh virtual
# environment, offline (no index, no build isolation: setuptools and pytest are Debian's), then
# its pytest tests against the library of this build.
# usage: check_python.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3  # Debian's, where setup.sh installs pytest and venv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -m venv --system-site-packages "$work/venv"
# A copy, so that the install's build folders stay out of the source tree.
cp -r "$here/../../python" "$work/src"
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation "$work/src"
cd "$work"  # not beside the sources: the installed package is the one imported
LOOM_LIBRARY="$build/libloom.so" LOOM_FIXTURES="$here/../../../shared/fixtures" \
    "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$work/src/tests"
