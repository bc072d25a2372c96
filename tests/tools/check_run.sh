#!/usr/bin/env bash
# `loom run` end to end on stories260K: the greedy story (prompt echoed, then the reference
# continuation from ../shared/models/MODELS.md), the timings on stderr, the error paths (missing
# model, a prompt longer than the context) with a message and a non-zero exit, Ctrl-C, and the KV
# cache line.
# Usage: check_run.sh LOOM_BINARY REPO_ROOT
source "$(dirname "$0")/stories_test_setup.sh"

"$loom" run -m "$model" -p "Once upon a time" -n 20 --temp 0 >"$tmp/out" 2>"$tmp/err" ||
    fail "loom run exited non-zero: $(cat "$tmp/err")"
expected=" Once upon a time, there was a little girl named Lily."
[ "$(head -c ${#expected} "$tmp/out")" = "$expected" ] || fail "story: $(cat "$tmp/out")"
# The story tokenizes back to the reference ids (432 383 286 261 376 298 315 421 395 317 after the
# prompt); its leading space is the one the tokenizer puts back.
story=$(head -c ${#expected} "$tmp/out")
ids=$("$loom" tokenize -m "$model" -p "${story# }" --ids)
[ "$ids" = "[1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426]" ] ||
    fail "ids of the story: $ids"
grep -q "load time = .* ms" "$tmp/err" || fail "load time: $(cat "$tmp/err")"
grep -Eq "prompt eval time = .* ms / +5 tokens .* tokens per second" "$tmp/err" ||
    fail "prompt eval line: $(cat "$tmp/err")"
grep -Eq "eval time = .* ms / +19 runs .* ms per token, .* tokens per second" "$tmp/err" ||
    fail "eval line: $(cat "$tmp/err")"
grep -Eq "graphs = [0-9]+ built, [0-9]+ reused" "$tmp/err" || fail "graph line: $(cat "$tmp/err")"
# stories260K: 5 layers, 4 KV heads of 8 values, F16 K and V: 5 * (32 + 32) * 2 bytes a cell.
grep -Eq "KV cache [0-9.]+ MiB: [0-9]+ cells x 5 layers, K F16, V F16, 640 bytes a cell" "$tmp/err" ||
    fail "KV cache line: $(cat "$tmp/err")"

# Seeded sampling is reproducible.
a=$("$loom" run -m "$model" -p "Once upon a time" -n 30 --seed 42 2>/dev/null)
b=$("$loom" run -m "$model" -p "Once upon a time" -n 30 --seed 42 2>/dev/null)
[ "$a" = "$b" ] || fail "--seed 42 gave two different stories"

expect_error() {  # expect_error PATTERN ARGS...: non-zero exit and PATTERN on stderr
    local pattern="$1" rc=0
    shift
    "$loom" run "$@" >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "exit code 0 for: $*"
    grep -Eq "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}
expect_error "^loom run: error: .*no-such-model.gguf" -m "$tmp/no-such-model.gguf" -p "Once"
expect_error "^loom run: error: \[run\] the prompt has [0-9]+ tokens, more than the context's 16" \
    -m "$model" -p "$(printf 'Once upon a time %.0s' 1 2 3 4 5 6)" -c 16
# --logit-bias (llama.cpp's -l): the greedy story's first token is "," (432); banned, another one
# comes; " there" (383) with +100 comes first. A malformed bias is an error.
first=$("$loom" run -m "$model" -p "Once upon a time" -n 1 --temp 0 2>/dev/null)
[ "$first" = " Once upon a time," ] || fail "first token: '$first'"
banned=$("$loom" run -m "$model" -p "Once upon a time" -n 1 --temp 0 -l 432-inf 2>/dev/null)
[ "${banned:0:17}" = " Once upon a time" ] && [ "$banned" != "$first" ] || fail "banned: '$banned'"
[ "$("$loom" run -m "$model" -p "Once upon a time" -n 1 --temp 0 --logit-bias 383+100 2>/dev/null)" = \
    " Once upon a time there" ] || fail "--logit-bias 383+100"
expect_error "\[options\] --logit-bias 383: TOKEN_ID\+BIAS" -m "$model" -p "Once" -l 383
expect_error "\[options\] --logit-bias 5\+inf: \+inf" -m "$model" -p "Once" -l 5+inf
expect_error "logit bias of token 9999: the vocabulary has 512 tokens" -m "$model" -p "Once" -n 1 -l 9999+1
# A context past the training one (2048 positions; no RoPE scaling stretches it) is cut to it.
"$loom" run -m "$model" -p "Once" -n 1 -c 4096 >/dev/null 2>"$tmp/err" || fail "-c 4096: $(cat "$tmp/err")"
grep -q "warning: --ctx-size 4096 is above the model's training context (with its RoPE scaling); using 2048" \
    "$tmp/err" || fail "no warning for -c 4096: $(cat "$tmp/err")"
# A full context stops the generation, or with --context-shift drops the older half of the
# tokens (after BOS) and goes on: the same text up to the first shift, then 149 more decodes.
"$loom" run -m "$model" -p "Once upon a time" -n 150 --temp 0 --ignore-eos -c 64 >"$tmp/stopped" \
    2>"$tmp/err" || fail "a full context: $(cat "$tmp/err")"
grep -q "the context is full (64 tokens); stopping" "$tmp/err" || fail "no stop: $(cat "$tmp/err")"
"$loom" run -m "$model" -p "Once upon a time" -n 150 --temp 0 --ignore-eos -c 64 --context-shift \
    >"$tmp/shifted" 2>"$tmp/err" || fail "--context-shift: $(cat "$tmp/err")"
grep -Eq "eval time = .* ms / +149 runs" "$tmp/err" || fail "shifted run: $(cat "$tmp/err")"
stopped=$(head -c -1 "$tmp/stopped")
[ "$(head -c ${#stopped} "$tmp/shifted")" = "$stopped" ] || fail "the shifted run changed the text before the shift"
[ "$(wc -c <"$tmp/shifted")" -gt "$(wc -c <"$tmp/stopped")" ] || fail "nothing after the shift"

# A model with a chat template gets the prompt as a user's message in it, and prints only the
# answer: the same tokens as the formatted text sent with --raw. --raw leaves the prompt alone.
printf '%s' '{% for m in messages %}[{{ m.role }}] {{ m.content }} {% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}' \
    >"$tmp/template.jinja"
"$loom" gguf set "$model" "$tmp/chat.gguf" --string-file tokenizer.chat_template="$tmp/template.jinja"
"$loom" run -m "$tmp/chat.gguf" -p "Once upon a time" -n 12 --temp 0 --system-prompt "Tell a story" \
    >"$tmp/chat" 2>"$tmp/err" || fail "run with a template: $(cat "$tmp/err")"
grep -q "the prompt as a user's message, in the model's Jinja template" "$tmp/err" ||
    fail "no note of the template: $(cat "$tmp/err")"
formatted="[system] Tell a story [user] Once upon a time [assistant]"
"$loom" run -m "$tmp/chat.gguf" --raw -p "$formatted" -n 12 --temp 0 >"$tmp/raw" 2>/dev/null
# (the echo of a raw prompt starts with the space SentencePiece puts before the text)
[ " $formatted$(cat "$tmp/chat")" = "$(cat "$tmp/raw")" ] ||
    fail "templated run: '$(cat "$tmp/chat")', raw: '$(cat "$tmp/raw")'"
[ -s "$tmp/chat" ] || fail "templated run printed nothing"
# A template chosen for a model without one; --system-prompt without a template is an error.
"$loom" run -m "$model" --chat-template-file "$tmp/template.jinja" -p "Once upon a time" -n 12 \
    --temp 0 --system-prompt "Tell a story" >"$tmp/chosen" 2>/dev/null
cmp -s "$tmp/chosen" "$tmp/chat" || fail "--chat-template-file: '$(cat "$tmp/chosen")'"
expect_error "^loom run: error: \[run\] --system-prompt needs a chat template" -m "$model" -p "Once" \
    --system-prompt "Hi"
expect_error "^loom run: error: \[run\] --raw sends the prompt as it is" -m "$model" -p "Once" \
    --raw --chat-template chatml

# --prompt-cache: the prompt's cells are saved after it; the same prompt again decodes only its
# last token (for its logits), a longer one only what it adds, and both print what a run without
# the cache prints. A file of another model (here: the same weights under another header),
# another KV type, or a truncated one is refused with a message.
pc="$tmp/prompt.cache"
"$loom" run -m "$model" -p "Once upon a time there was" -n 12 --temp 0 --prompt-cache "$pc" \
    >"$tmp/pc1" 2>"$tmp/err" || fail "first --prompt-cache run: $(cat "$tmp/err")"
grep -q "prompt cache $pc: not there yet; saved after the prompt" "$tmp/err" ||
    fail "first --prompt-cache run: $(cat "$tmp/err")"
[ -s "$pc" ] || fail "--prompt-cache wrote no file"
"$loom" run -m "$model" -p "Once upon a time there was" -n 12 --temp 0 --prompt-cache "$pc" \
    >"$tmp/pc2" 2>"$tmp/err" || fail "second --prompt-cache run: $(cat "$tmp/err")"
grep -q "prompt cache $pc: 6 of the prompt's 7 tokens reused" "$tmp/err" ||
    fail "second --prompt-cache run: $(cat "$tmp/err")"
grep -Eq "prompt eval time = .* ms / +1 tokens" "$tmp/err" || fail "prompt decoded again: $(cat "$tmp/err")"
cmp -s "$tmp/pc1" "$tmp/pc2" || fail "the cached prompt changed the text: $(cat "$tmp/pc2")"
"$loom" run -m "$model" -p "Once upon a time there was a dog" -n 12 --temp 0 --prompt-cache "$pc" \
    >"$tmp/pc3" 2>"$tmp/err" || fail "longer prompt: $(cat "$tmp/err")"
grep -q "prompt cache $pc: 7 of the prompt's 10 tokens reused" "$tmp/err" ||
    fail "longer prompt: $(cat "$tmp/err")"
"$loom" run -m "$model" -p "Once upon a time there was a dog" -n 12 --temp 0 >"$tmp/pc4" 2>/dev/null
cmp -s "$tmp/pc3" "$tmp/pc4" || fail "with the cache: '$(cat "$tmp/pc3")', without: '$(cat "$tmp/pc4")'"
# Without --seed, the saved generator replaces the new random one: a rerun draws the same.
"$loom" run -m "$model" -p "Once upon a time" -n 20 --prompt-cache "$tmp/rng.cache" >"$tmp/r1" 2>/dev/null
"$loom" run -m "$model" -p "Once upon a time" -n 20 --prompt-cache "$tmp/rng.cache" >"$tmp/r2" \
    2>"$tmp/err" || fail "sampled rerun: $(cat "$tmp/err")"
grep -q "sampler state from the prompt cache" "$tmp/err" || fail "sampled rerun: $(cat "$tmp/err")"
cmp -s "$tmp/r1" "$tmp/r2" || fail "sampled rerun: '$(cat "$tmp/r1")' then '$(cat "$tmp/r2")'"
expect_error "^loom run: error: \[state\] $pc: saved with another model" -m "$tmp/chat.gguf" --raw \
    -p "Once" -n 1 --prompt-cache "$pc"
expect_error "^loom run: error: \[state\] $pc: its KV cache is .*another KV type" -m "$model" \
    --kv-type f32 -p "Once" -n 1 --prompt-cache "$pc"
head -c 2000 "$pc" >"$tmp/truncated.cache"
expect_error "^loom run: error: \[state\] $tmp/truncated.cache is truncated" -m "$model" -p "Once" \
    -n 1 --prompt-cache "$tmp/truncated.cache"

# --grammar / --grammar-file: the text after the echoed prompt follows the grammar, which here
# ends after a bounded object, so the end-of-generation token is the only one left and the run
# stops by itself; python's json module is the reference parser. Bad grammars are refused.
grammar='root ::= "{\"name\": \"" [a-z ]{1,12} "\", \"age\": " [0-9]{1,2} "}"'
for seed in 1 2 3; do
    "$loom" run -m "$model" -p "Data:" -n 100 --seed $seed --grammar "$grammar" >"$tmp/g" 2>"$tmp/err" ||
        fail "--grammar: $(cat "$tmp/err")"
    text=$(sed -e '1s/^ *Data://' "$tmp/g")
    echo "$text" | grep -Eq '^\{"name": "[a-z ]{1,12}", "age": [0-9]{1,2}\}$' || fail "--grammar gave '$text'"
    python3 -c 'import json, sys; json.loads(sys.argv[1])' "$text" || fail "not JSON: '$text'"
done
"$loom" run -m "$model" -p "Data:" -n 40 --seed 4 --grammar-file "$2/grammars/json.gbnf" \
    >/dev/null 2>"$tmp/err" || fail "--grammar-file grammars/json.gbnf: $(cat "$tmp/err")"
expect_error "^loom run: error: \[grammar\] line 1, column 10: undefined rule 'value'" -m "$model" \
    -p "Once" --grammar "root ::= value"
expect_error "^loom run: error: \[run\] --grammar, --grammar-file, --json-schema, --json-schema-file: give one" \
    -m "$model" -p "Once" --grammar 'root ::= "a"' --grammar-file "$2/grammars/json.gbnf"
expect_error "^loom run: error: \[run\] cannot read the grammar file '$tmp/none.gbnf'" -m "$model" \
    -p "Once" --grammar-file "$tmp/none.gbnf"

# --json-schema / --json-schema-file: the text after the echoed prompt is a JSON document that
# python3-jsonschema, the reference validator, finds valid under the schema, whatever the seed
# draws. Schemas the converter cannot express are refused, naming where.
py=$(for p in /usr/bin/python3 python3; do "$p" -c 'import jsonschema' 2>/dev/null && { echo "$p"; break; }; done)
[ -n "$py" ] || fail "no python3 with jsonschema: make setup installs python3-jsonschema"
schema='{"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
         "age": {"type": "integer", "minimum": 0, "maximum": 120}, "pets": {"type": "array", "items": {"enum": ["cat", "dog"]},
         "maxItems": 2}, "note": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}},
         "required": ["name", "age"]}'
validate='import json, sys, jsonschema
jsonschema.validate(json.loads(sys.argv[1]), json.loads(sys.argv[2]))'
for seed in 1 2 3 4 5 6; do
    "$loom" run -m "$model" -p "Data:" -n 1000 --seed $seed --json-schema "$schema" >"$tmp/j" \
        2>"$tmp/err" || fail "--json-schema: $(cat "$tmp/err")"
    text=$(sed -e '1s/^ *Data://' "$tmp/j")
    "$py" -c "$validate" "$text" "$schema" || fail "--json-schema, seed $seed, gave '$text'"
done
echo '{"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4}' >"$tmp/s.json"
"$loom" run -m "$model" -p "Data:" -n 1000 --seed 9 --json-schema-file "$tmp/s.json" >"$tmp/j" \
    2>"$tmp/err" || fail "--json-schema-file: $(cat "$tmp/err")"
"$py" -c "$validate" "$(sed -e '1s/^ *Data://' "$tmp/j")" "$(cat "$tmp/s.json")" ||
    fail "--json-schema-file gave '$(cat "$tmp/j")'"
# A pattern: what the model writes under it matches (python3-jsonschema checks patterns too).
zip='{"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"}}, "required": ["zip"]}'
for seed in 1 2 3; do
    "$loom" run -m "$model" -p "Data:" -n 200 --seed $seed --json-schema "$zip" >"$tmp/j" \
        2>"$tmp/err" || fail "a pattern: $(cat "$tmp/err")"
    "$py" -c "$validate" "$(sed -e '1s/^ *Data://' "$tmp/j")" "$zip" ||
        fail "a pattern gave '$(cat "$tmp/j")'"
done
expect_error "^loom run: error: \[json-schema\] at /properties/zip/pattern: lookarounds" \
    -m "$model" -p "Once" --json-schema '{"properties": {"zip": {"type": "string", "pattern": "^(?=1)[0-9]+$"}}}'
expect_error "^loom run: error: \[json-schema\] the schema is not JSON" -m "$model" -p "Once" \
    --json-schema '{"type": '
expect_error "^loom run: error: \[run\] --grammar, --grammar-file, --json-schema, --json-schema-file: give one" \
    -m "$model" -p "Once" --grammar 'root ::= "a"' --json-schema '{}'

# Ctrl-C while generating: the timings so far, "interrupted", and exit code 130. A generated
# model of 4,096 trained positions generates long enough to be interrupted.
"$loom" gguf synth --type F32 --n-vocab 2000 --n-embd 512 --n-layer 4 --n-head 8 --n-head-kv 4 \
    --n-ff 1024 "$tmp/synth.gguf" >/dev/null
# A file of its own, empty before the job starts: the loop below may look before the job's shell
# has opened it, and must not see an earlier test's output there.
: >"$tmp/sigint"
"$loom" run -m "$tmp/synth.gguf" -p "a" -n -1 --ignore-eos >"$tmp/sigint" 2>"$tmp/err" &
pid=$!
# Generating (so past loading, where SIGINT's handler is installed) before the signal; a loaded
# machine can take seconds to get there.
for _ in $(seq 1200); do
    [ "$(wc -c <"$tmp/sigint")" -gt 16 ] && break
    sleep 0.05
done
[ "$(wc -c <"$tmp/sigint")" -gt 16 ] || fail "no output within 60 s: $(cat "$tmp/err")"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || fail "exit code $rc after SIGINT: $(cat "$tmp/err")"
grep -q "loom run: interrupted" "$tmp/err" || fail "no interruption note: $(cat "$tmp/err")"
grep -Eq "eval time = .* ms / +[0-9]+ runs" "$tmp/err" || fail "no timings: $(cat "$tmp/err")"
echo "loom run: story, timings, errors and Ctrl-C as expected"
