#!/usr/bin/env bash
# `loom embed` end to end on llama.cpp's bert fixture: the prompt's raw mean-pooled embedding is
# llama.cpp's, the default one has length 1, a file of 100 lines (decoded many at a time) gives
# each line the embedding it has alone, --pooling none one per token, the jsonl and f32 outputs
# the same numbers, progress lines on stderr, the error paths (message, non-zero exit), and a
# reranker's scores of query / document pairs (llama-embedding --pooling rank's).
# Usage: check_embed.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
fixture="$2/../shared/fixtures/bert"
[ -f "$fixture/case.json" ] || { echo "missing $fixture (../shared beside the repository)"; exit 1; }
model="$fixture/model.gguf"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompt=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).prompt_text)' \
    "$fixture/case.json")

# The raw pooled embedding against llama.cpp's; the default one normalised.
"$loom" embed -m "$model" -p "$prompt" --normalize 0 >"$tmp/raw.json" 2>"$tmp/err" ||
    fail "embed: $(cat "$tmp/err")"
"$loom" embed -m "$model" -p "$prompt" >"$tmp/unit.json" 2>"$tmp/err" || fail "embed: $(cat "$tmp/err")"
node -e '
const fs = require("fs");
const want = JSON.parse(fs.readFileSync(process.argv[1])).pooled;
const raw = JSON.parse(fs.readFileSync(process.argv[2]));
const unit = JSON.parse(fs.readFileSync(process.argv[3]));
if (raw.object !== "list" || raw.data.length !== 1 || raw.data[0].index !== 0) throw "shape";
if (raw.usage.prompt_tokens !== 41) throw "usage " + JSON.stringify(raw.usage);
const got = raw.data[0].embedding;
let err = 0, ref = 0;
want.forEach((w, i) => { err += (got[i] - w) ** 2; ref += w * w; });
if (!(err / ref < 1e-10)) throw "pooled differs from llama.cpp: nmse " + err / ref;
const norm = Math.hypot(...unit.data[0].embedding);
if (Math.abs(norm - 1) > 1e-5) throw "normalised length " + norm;
unit.data[0].embedding.forEach((x, i) => {
  if (Math.abs(x - got[i] / Math.hypot(...got)) > 1e-6) throw "normalised " + i; });
' "$fixture/case.json" "$tmp/raw.json" "$tmp/unit.json" || fail "the pooled embedding"

# 100 lines, the prompt as line 37: each as it is alone (many texts in one decode).
node -e '
const words = ["the", "cat", "dog", "sat", "ran", "over", "a", "red", "barn", "bird", "sang", "tree"];
let seed = 7;
const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
const lines = [];
for (let i = 0; i < 100; ++i) {
  const n = 3 + next() % 20;
  lines.push(i === 36 ? process.argv[1] : Array.from({ length: n }, () => words[next() % words.length]).join(" "));
}
require("fs").writeFileSync(process.argv[2], lines.join("\n") + "\n");
' "$prompt" "$tmp/lines.txt"
"$loom" embed -m "$model" -f "$tmp/lines.txt" -o jsonl >"$tmp/lines.jsonl" 2>"$tmp/err" ||
    fail "embed -f: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/lines.jsonl")" = 100 ] || fail "$(wc -l <"$tmp/lines.jsonl") lines of output"
grep -q "^embedding: 100% (100/100 texts)$" "$tmp/err" || fail "no progress: $(cat "$tmp/err")"
sed -n 5p "$tmp/lines.txt" >"$tmp/line5.txt"
"$loom" embed -m "$model" -f "$tmp/line5.txt" -o jsonl >"$tmp/line5.jsonl" 2>/dev/null
node -e '
const fs = require("fs");
const rows = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const unit = JSON.parse(fs.readFileSync(process.argv[2])).data[0].embedding;
const alone = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const close = (a, b) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-6);
if (!close(rows[36], unit)) throw "line 37 differs from the prompt alone";
if (!close(rows[4], alone)) throw "line 5 differs from itself alone";
' "$tmp/lines.jsonl" "$tmp/unit.json" "$tmp/line5.jsonl" || fail "batched lines"

# Per token, and raw float32.
"$loom" embed -m "$model" -p "$prompt" --pooling none -o jsonl >"$tmp/tokens.jsonl" 2>/dev/null
[ "$(wc -l <"$tmp/tokens.jsonl")" = 41 ] || fail "--pooling none: $(wc -l <"$tmp/tokens.jsonl") rows"
"$loom" embed -m "$model" -f "$tmp/lines.txt" -o f32 >"$tmp/lines.f32" 2>/dev/null
[ "$(stat -c %s "$tmp/lines.f32")" = $((100 * 32 * 4)) ] || fail "f32 size $(stat -c %s "$tmp/lines.f32")"

# Errors: a message and a non-zero exit.
expect_error() {  # expect_error PATTERN ARGS...
    local pattern="$1"
    shift
    if "$loom" embed "$@" >"$tmp/out" 2>"$tmp/err"; then fail "embed $* succeeded"; fi
    grep -q "$pattern" "$tmp/err" || fail "embed $*: $(cat "$tmp/err")"
}
expect_error "give one of -p TEXT and -f FILE" -m "$model"
expect_error "not one of none, mean, cls, last" -m "$model" -p hi --pooling max
expect_error "not one of json, jsonl, f32" -m "$model" -p hi -o xml
: >"$tmp/empty.txt"
expect_error "holds no text" -m "$model" -f "$tmp/empty.txt"
expect_error "no classifier head: rank pooling needs a reranker" -m "$model" -p hi --pooling rank

# A reranker (tests/engine/model/encoders/bert-rank.json's synthetic BERT with a head): each
# QUERY<tab>DOCUMENT line scored as llama-embedding --pooling rank scored it.
cases="$2/tests/engine/model/encoders"
mapfile -t synth < <(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).synth.join("\n"))' "$cases/bert-rank.json")
"$loom" gguf synth --vocab "$2/../shared/models/vocab/ggml-vocab-bert-bge.gguf" --type F32 \
    "${synth[@]}" "$tmp/rerank.gguf" >/dev/null || fail "writing the reranker"
"$loom" embed -m "$tmp/rerank.gguf" -f "$cases/pairs.txt" -o jsonl >"$tmp/scores.jsonl" \
    2>"$tmp/err" || fail "embed a reranker: $(cat "$tmp/err")"
node -e '
const fs = require("fs");
const want = JSON.parse(fs.readFileSync(process.argv[1])).embeddings;
const got = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse);
if (got.length !== want.length) throw got.length + " scores";
got.forEach((g, i) => { if (g.length !== 1 || Math.abs(g[0] - want[i][0]) > 1e-5) throw "pair " + i + ": " + g + " vs " + want[i]; });
' "$cases/bert-rank.json" "$tmp/scores.jsonl" || fail "rerank scores"
echo "loom embed: llama.cpp's pooled embedding, normalised, batched lines as alone, per token, f32, reranker scores, errors"
