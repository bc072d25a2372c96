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
fields='"max_tokens": 24, "temperature": 0, "logprobs": 3, "ignore_eos": true'

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
    send_all "$family.one_slot" "$fields"
    stop_server
    start_server --parallel 4 --ctx-size 1024 --threads 2
    send_all "$family.four_slots" "$fields"
    stop_server
    for i in 0 1 2 3; do
        cmp -s "$tmp/$family.one_slot.$i.choices" "$tmp/$family.four_slots.$i.choices" ||
            fail "$family: prompt $i differs between --parallel 1 and 4: $(diff \
                "$tmp/$family.one_slot.$i.choices" "$tmp/$family.four_slots.$i.choices" |
                head -c 600)"
    done
done
echo "families: run and serve --parallel 4 as expected"
