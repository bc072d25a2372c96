# Sourced by the tools' shell tests that take LOOM_BINARY REPO_ROOT: sets $loom and $model
# (stories260K, which must exist beside the repository), fail MESSAGE, and $tmp, a folder
# removed at exit.
set -euo pipefail
loom="$1"
model="$2/../shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model (../shared/models beside the repository)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
