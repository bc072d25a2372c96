#!/usr/bin/env bash
# `loom bench` end to end on a tiny generated model: JSON that parses, one entry per test with a
# sample per repetition and positive figures, llama-bench's field names, the markdown table, the
# CSV header, and errors.
# Usage: check_bench.sh LOOM_BINARY
set -euo pipefail
loom="$1"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loom" gguf synth "$tmp/tiny.gguf" --type Q8_0 --n-vocab 512 --n-embd 64 --n-layer 2 \
    --n-head 4 --n-head-kv 2 --n-ff 128 >/dev/null

"$loom" bench -m "$tmp/tiny.gguf" -p 16,32 -n 4 -pg 8,2 -r 3 -t 1,2 -o json >"$tmp/out.json" \
    2>"$tmp/err"
python3 - "$tmp/out.json" <<'PY' || fail "json: $(cat "$tmp/out.json")"
import json, sys
entries = json.load(open(sys.argv[1]))
tests = sorted((e["n_threads"], e["n_prompt"], e["n_gen"]) for e in entries)
want = sorted((t, p, n) for t in (1, 2) for p, n in ((16, 0), (32, 0), (0, 4), (8, 2)))
assert tests == want, (tests, want)
for e in entries:
    for key in ("model_filename", "model_type", "model_size", "model_n_params", "n_batch",
                "n_ubatch", "type_k", "flash_attn", "test_time", "avg_ns", "stddev_ns"):
        assert key in e, key
    assert e["model_filename"] == "tiny.gguf"
    assert len(e["samples_ns"]) == 3 and len(e["samples_ts"]) == 3
    assert e["avg_ts"] > 0 and all(x > 0 for x in e["samples_ts"]) and e["stddev_ts"] >= 0
    assert e["model_size"] > 0 and e["model_n_params"] > 0
    # tokens per second of a sample = tokens / its time
    tokens = e["n_prompt"] + e["n_gen"]
    for ns, ts in zip(e["samples_ns"], e["samples_ts"]):
        assert abs(ts - tokens * 1e9 / ns) < 1e-6 * ts
PY

"$loom" bench -m "$tmp/tiny.gguf" -p 16 -n 4 -r 2 -fa 0,1 -o jsonl >"$tmp/out.jsonl" 2>/dev/null
[ "$(wc -l <"$tmp/out.jsonl")" -eq 4 ] || fail "jsonl lines: $(cat "$tmp/out.jsonl")"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/out.jsonl" ||
    fail "jsonl parse"

"$loom" bench -m "$tmp/tiny.gguf" -p 16 -n 4 -r 2 -fa 0,1 >"$tmp/out.md" 2>/dev/null
head -1 "$tmp/out.md" | grep -Eq '^\| model +\| +size \| +params \| backend \| threads \| fa \| +test \| +t/s \|$' ||
    fail "markdown header: $(head -1 "$tmp/out.md")"
[ "$(grep -c '| *pp16 |' "$tmp/out.md")" -eq 2 ] || fail "markdown rows: $(cat "$tmp/out.md")"
grep -Eq '\| +[0-9.]+ ± [0-9.]+ \|$' "$tmp/out.md" || fail "t/s column: $(cat "$tmp/out.md")"

# -d: each sample starts with that many tokens in the cache; the cache is sized for them.
"$loom" bench -m "$tmp/tiny.gguf" -p 16 -n 4 -d 0,100 -r 1 -o jsonl >"$tmp/depth.jsonl" \
    2>"$tmp/depth.err"
python3 - "$tmp/depth.jsonl" <<'PY' || fail "depth: $(cat "$tmp/depth.jsonl")"
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
got = sorted((e["n_depth"], e["n_prompt"], e["n_gen"]) for e in entries)
assert got == [(0, 0, 4), (0, 16, 0), (100, 0, 4), (100, 16, 0)], got
PY
grep -Eq 'KV cache of tg4 @ d100: [0-9.]+ MiB: (10[4-9]|1[1-9][0-9]|[2-9][0-9][0-9]) cells' \
    "$tmp/depth.err" || fail "depth cache: $(cat "$tmp/depth.err")"
"$loom" bench -m "$tmp/tiny.gguf" -p 16 -n 0 -d 50 -r 1 2>/dev/null | grep -q '| *pp16 @ d50 |' ||
    fail "depth test name"
rc=0
"$loom" bench -m "$tmp/tiny.gguf" -d -5 -r 1 >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q 'depth' "$tmp/err" || fail "negative depth: $(cat "$tmp/err")"

# --no-repack: the weights stay in the file's layout (the per-row kernels); the same tests run.
"$loom" bench -m "$tmp/tiny.gguf" -p 16 -n 4 -r 1 --no-repack -o jsonl >"$tmp/plain.jsonl" 2>/dev/null
python3 - "$tmp/plain.jsonl" <<'PY' || fail "--no-repack: $(cat "$tmp/plain.jsonl")"
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
assert sorted((e["n_prompt"], e["n_gen"]) for e in entries) == [(0, 4), (16, 0)], entries
assert all(e["avg_ts"] > 0 for e in entries)
PY

"$loom" bench -m "$tmp/tiny.gguf" -p 16 -n 0 -r 1 -o csv >"$tmp/out.csv" 2>/dev/null
head -1 "$tmp/out.csv" | grep -q '^build_commit,build_number,cpu_info,' || fail "csv header"
[ "$(wc -l <"$tmp/out.csv")" -eq 2 ] || fail "csv rows"

rc=0
"$loom" bench -m "$tmp/tiny.gguf" -pg 8 -r 1 >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q 'expected two numbers' "$tmp/err" || fail "bad -pg: $(cat "$tmp/err")"
rc=0
"$loom" bench -m "$tmp/missing.gguf" -r 1 >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -ne 0 ] && grep -q 'missing.gguf' "$tmp/err" || fail "missing model: $(cat "$tmp/err")"
echo "loom bench: json, jsonl, markdown, csv and errors as expected"
