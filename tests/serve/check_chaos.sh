#!/usr/bin/env bash
# The chaos test (tests/serve/chaos.mjs): CLIENTS (64) clients for SECONDS against `loom serve
# --parallel 4` on stories260K, then the server's RSS growth (after 10 s of the same mix)
# within RSS_BOUND_KB (32 MiB), and SIGINT ending it with exit code 0. `make chaos` runs it for 120 s;
# `make test` for 15 s. LOOM may be an ASan build (`make chaos-asan`): a sanitizer report ends the
# server with a non-zero exit, which fails the test.
# Usage: check_chaos.sh LOOM_BINARY REPO_ROOT [SECONDS] [CLIENTS] [SEED]
set -euo pipefail
loom="$1"
root="$2"
seconds="${3:-120}"
clients="${4:-64}"
seed="${5:-1}"
# The bound on RSS growth after the warm-up: the allocator keeps some of what the clients' bodies
# and 64 connections' threads took (docs/RELIABILITY.md: +18 MB in 120 s since `loom serve` fixes
# glibc's mmap threshold; +64 MB before).
rss_bound_kb="${RSS_BOUND_KB:-32768}"
model="$root/../shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model (../shared beside the repository)"; exit 1; }
source "$root/tests/serve/server_test_setup.sh"

# --timeout 2: a slowloris sender is dropped after 2 s of silence (the default is 600).
start_server --parallel 4 --ctx-size 2048 --max-queue 32 --slots --timeout 2 --threads 2
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
node "$root/tests/serve/chaos.mjs" "$url" 10 "$clients" "$((seed + 1000))" >"$tmp/warmup.json" 2>&1 ||
    fail "the warm-up (exit code $?): $(cat "$tmp/warmup.json")"
rss_start=$(rss)
node "$root/tests/serve/chaos.mjs" "$url" "$seconds" "$clients" "$seed" >"$tmp/chaos.json" 2>&1 ||
    fail "chaos (exit code $?): $(cat "$tmp/chaos.json")"
rss_end=$(rss)
kill -0 "$pid" 2>/dev/null || fail "the server died: $(tail -5 "$tmp/server.log")"
stop_server
growth=$((rss_end - rss_start))
[ "$growth" -le "$rss_bound_kb" ] ||
    fail "RSS grew by $growth kB (from $rss_start kB), more than $rss_bound_kb kB: $(cat "$tmp/chaos.json")"
echo "chaos: $(cat "$tmp/chaos.json")"
echo "chaos: RSS $rss_start kB -> $rss_end kB (bound +$rss_bound_kb kB); no crash, every slot free, counters consistent, greedy answers as alone"
