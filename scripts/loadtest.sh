#!/usr/bin/env bash
# `make loadtest`: 32 streaming clients for 60 s (LOADTEST_SECONDS, LOADTEST_CLIENTS) against
# `loom serve` on a generated ~150M-parameter llama (Q8_0, written once to build/loadtest/),
# with the server's RSS before and after. Pass: no crash, no 5xx but 503, RSS growth < 5 %.
# Usage: loadtest.sh LOOM_BINARY
set -euo pipefail
loom="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${LOADTEST_SECONDS:-60}"
clients="${LOADTEST_CLIENTS:-32}"
dir="$root/build/loadtest"
model="$dir/llama-150m-q8_0.gguf"
mkdir -p "$dir"
if [ ! -f "$model" ]; then
    # 12 layers of 768 (GPT-2 small's shape) with a 32,000-token vocabulary: 134 M parameters.
    "$loom" gguf synth "$model" --type Q8_0 --n-vocab 32000 --n-embd 768 --n-layer 12 \
        --n-head 12 --n-head-kv 12 --n-ff 2048
fi
"$loom" serve -m "$model" --port 0 --parallel 4 --ctx-size 4096 --max-queue 16 2>"$dir/server.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 300); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$dir/server.log" 2>/dev/null || true)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.1
done
url="http://127.0.0.1:$port"
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
# A short warm-up, so that the start figure includes the buffers every request needs.
node "$root/tests/serve/loadtest.mjs" "$url" 5 "$clients" >/dev/null
rss_start=$(rss)
node "$root/tests/serve/loadtest.mjs" "$url" "$seconds" "$clients" | tee "$dir/result.json"
rss_end=$(rss)
kill -0 "$pid" || { echo "FAIL: the server died"; exit 1; }
kill -INT "$pid"
wait "$pid" || { echo "FAIL: exit code $? after SIGINT"; exit 1; }
echo "RSS: ${rss_start} kB at the start, ${rss_end} kB at the end"
python3 - "$dir/result.json" "$rss_start" "$rss_end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
start, end = int(sys.argv[2]), int(sys.argv[3])
bad = {s: n for s, n in r["statuses"].items() if int(s) >= 500 and s != "503"}
growth = (end - start) / start
print(f"RSS growth {100 * growth:.2f} %; 5xx other than 503: {bad or 'none'}; "
      f"client errors: {r['client_errors']}")
sys.exit(1 if bad or growth >= 0.05 or r["client_errors"] else 0)
PY
