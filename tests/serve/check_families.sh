#!/usr/bin/env bash
# The newer families (their llama.cpp fixture models in ../shared/fixtures) through the tools:
# `loom run` generates and prints its timings, and `loom serve --parallel 4` answers four
# completions at once with the same tokens and log-probabilities as one slot does, one request
# after another (a KV stream per slot; the sliding-window models' window caches too).
# Usage: check_families.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
root="$2"
fixtures="$root/../shared/fixtures"
[ -d "$fixtures/gemma2" ] || { echo "missing $fixtures (../shared beside the repository)"; exit 1; }
model=""
source "$root/tests/serve/server_test_setup.sh"

prompts=("The cat sat on the mat" "Then it jumped down" "The bird sang a song" "and flew over the")
send_all() {  # send_all TAG: the four requests at once, each answer's choices to $tmp/TAG.i
    local clients=()
    for i in 0 1 2 3; do
        curl -s -d "{\"prompt\": \"${prompts[$i]}\", \"max_tokens\": 24, \"temperature\": 0,
                     \"logprobs\": 3, \"ignore_eos\": true}" "$url/v1/completions" >"$tmp/$1.$i" &
        clients+=($!)
    done
    wait "${clients[@]}"
    for i in 0 1 2 3; do
        node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
                 if (!r.choices || r.choices[0].text.length === 0) {
                     console.error(JSON.stringify(r)); process.exit(1); }
                 console.log(JSON.stringify(r.choices))' "$tmp/$1.$i" >"$tmp/$1.$i.choices" ||
            fail "$family: answer $i with $1"
    done
}

for family in gemma2 gemma3 gpt-oss phi3 granite olmo2 command-r; do
    model="$fixtures/$family/model.gguf"
    "$loom" run -m "$model" -p "The cat sat on the mat" -n 16 --temp 0 --ignore-eos -t 2 \
        >"$tmp/out" 2>"$tmp/err" || fail "$family: loom run: $(cat "$tmp/err")"
    grep -Eq "prompt eval time = .* ms / +[0-9]+ tokens .* tokens per second" "$tmp/err" ||
        fail "$family: prompt timing: $(cat "$tmp/err")"
    grep -Eq "eval time = .* ms / +15 runs .* tokens per second" "$tmp/err" ||
        fail "$family: generation timing: $(cat "$tmp/err")"
    [ "$(wc -c <"$tmp/out")" -gt 24 ] || fail "$family: nothing generated: $(cat "$tmp/out")"

    start_server --parallel 1 --ctx-size 256 --threads 2
    send_all one_slot
    stop_server
    start_server --parallel 4 --ctx-size 1024 --threads 2
    send_all four_slots
    stop_server
    for i in 0 1 2 3; do
        cmp -s "$tmp/one_slot.$i.choices" "$tmp/four_slots.$i.choices" ||
            fail "$family: prompt $i differs between --parallel 1 and 4: $(diff \
                "$tmp/one_slot.$i.choices" "$tmp/four_slots.$i.choices" | head -c 600)"
    done
done
echo "families: run and serve --parallel 4 as expected"
