#!/usr/bin/env bash
# loom serve end to end: tests/serve/openai_test.mjs against a server on stories260K with 4 slots
# of 512 cells, the same answers bit for bit from 1 and 4 slots, a full queue, --api-key, chat
# with the chatml fallback and with a model's own Jinja template (tools, tool calls, a template
# that raises), prompt caching and slot files, constrained output, tool calls (tools_test.mjs),
# reasoning_content, /props, /slots, /apply-template, CORS, the chat page at / (webui_test.mjs;
# --no-webui), /v1/embeddings on an embedding model (embeddings_test.mjs), /v1/rerank on a
# reranker (rerank_test.mjs), SIGHUP ignored, SIGTERM letting the request in flight finish
# (--shutdown-timeout cancelling it when short), and SIGINT stopping the server with exit code 0.
# Usage: check_server.sh LOOM_BINARY REPO_ROOT
set -euo pipefail
loom="$1"
root="$2"
model="$root/../shared/models/stories260K.gguf"
[ -f "$model" ] || { echo "missing $model (../shared beside the repository)"; exit 1; }
[ -d "$root/tests/serve/node_modules/openai" ] ||
    { echo "missing the openai npm package: run scripts/setup.sh"; exit 1; }
source "$root/tests/serve/server_test_setup.sh"

start_server --parallel 4 --ctx-size 2048 --chat-template chatml --threads 2
node "$root/tests/serve/openai_test.mjs" "$loom" "$model" "$url" || fail "openai client tests"
# The chat page at /, in headless Chromium.
[ -x /usr/bin/chromium ] || fail "missing /usr/bin/chromium: run scripts/setup.sh"
node "$root/tests/serve/webui_test.mjs" "$url" "$tmp/webui.png" || fail "the chat page"
stop_server

# Batch invariance through the server: four prompts' greedy tokens and log-probabilities are the
# same bit for bit from one slot (one request after another) as from four slots at once.
prompts=("Once upon a time" "The cat sat" "Lily and Tom went to the park" "One day")
fields='"max_tokens": 24, "temperature": 0, "logprobs": 5'
start_server --parallel 1 --ctx-size 2048 --max-queue 8
send_all one_slot "$fields"
stop_server
start_server --parallel 4 --ctx-size 2048
send_all four_slots "$fields"
stop_server
for i in 0 1 2 3; do
    cmp -s "$tmp/one_slot.$i.choices" "$tmp/four_slots.$i.choices" ||
        fail "prompt $i differs between --parallel 1 and 4: $(diff "$tmp/one_slot.$i.choices" \
            "$tmp/four_slots.$i.choices" | head -c 600)"
done

# One slot, one place in the queue: of three long requests at once, one is refused with 503.
start_server --parallel 1 --ctx-size 512 --max-queue 1
clients=()
for i in 1 2 3; do
    curl -s -D "$tmp/headers$i" -o "$tmp/body$i" -w '%{http_code}\n' \
        -d '{"prompt": "Once upon a time", "max_tokens": 300}' "$url/v1/completions" \
        >"$tmp/code$i" &
    clients+=($!)
done
wait "${clients[@]}" || true
codes=$(cat "$tmp/code1" "$tmp/code2" "$tmp/code3" | sort | tr '\n' ' ')
[ "$codes" = "200 200 503 " ] || fail "codes with a full queue: $codes"
grep -il '^Retry-After: 1' "$tmp"/headers* >/dev/null || fail "no Retry-After on the 503"
stop_server

start_server --parallel 1 --ctx-size 256 --api-key sesame
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -d '{"prompt": "a"}' "$url/v1/completions")
[ "$code" = 401 ] && grep -q '"type":"authentication_error"' "$tmp/body" || fail "no key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong' "$url/v1/models")
[ "$code" = 401 ] || fail "wrong key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sesame' "$url/v1/models")
[ "$code" = 200 ] || fail "right key: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/health")
[ "$code" = 200 ] || fail "health without a key: $code"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$url/")
[ "$code" = 200 ] && grep -q '<title>Loom</title>' "$tmp/body" || fail "the chat page without a key: $code"
# stories260K has no chat template: chat is chatml, with a warning at start-up.
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -H 'Authorization: Bearer sesame' \
    -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}' \
    "$url/v1/chat/completions")
[ "$code" = 200 ] || fail "chat without a template: $code $(cat "$tmp/body")"
grep -q "the model has no chat template (tokenizer.chat_template); using chatml" \
    "$tmp/server.log" || fail "no-template warning: $(cat "$tmp/server.log")"
stop_server

# A model with a Jinja template of its own: tools and tool calls (arguments as a JSON string)
# reach it, and a template that raises is a 400 with its message.
cat >"$tmp/tools.jinja" <<'JINJA'
{%- for m in messages %}
{%- if m.content == 'raise' %}{{ raise_exception('the template refuses: ' ~ m.role) }}{% endif %}
{{- m.role }}: {{ m.content }}
{%- for c in m.tool_calls or [] %} -> {{ c.function.name }}({{ c.function.arguments|tojson }}){% endfor %}
{% endfor %}
{%- if tools %}{{ tools|tojson }}
{% endif %}assistant:
JINJA
"$loom" gguf set "$model" "$tmp/jinja.gguf" --string-file tokenizer.chat_template="$tmp/tools.jinja"
model="$tmp/jinja.gguf" start_server --parallel 1 --ctx-size 1024
grep -q "chat template: the model's Jinja template" "$tmp/server.log" ||
    fail "template banner: $(cat "$tmp/server.log")"
chat_usage() {  # chat_usage BODY: the prompt's token count; fails unless 200
    code=$(curl -s -o "$tmp/body" -w '%{http_code}' -d "$1" "$url/v1/chat/completions")
    [ "$code" = 200 ] || fail "chat $code: $(cat "$tmp/body")"
    node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).usage.prompt_tokens)' \
        "$tmp/body"
}
messages='[{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": null,
  "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather",
  "arguments": "{\"city\": \"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "18C"}]'
tools='[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]'
plain=$(chat_usage "{\"messages\": $messages, \"max_tokens\": 1}")
with_tools=$(chat_usage "{\"messages\": $messages, \"tools\": $tools, \"max_tokens\": 1}")
[ "$with_tools" -gt "$plain" ] || fail "tools did not reach the template: $plain vs $with_tools"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' \
    -d '{"messages": [{"role": "user", "content": "raise"}]}' "$url/v1/chat/completions")
[ "$code" = 400 ] && grep -q 'the template refuses: user' "$tmp/body" ||
    fail "a raising template: $code $(cat "$tmp/body")"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -d '{"messages": [{"role": "user", "content": "x"}],
    "tools": {"not": "a list"}}' "$url/v1/chat/completions")
[ "$code" = 400 ] && grep -q "'tools' must be an array" "$tmp/body" || fail "bad tools: $code"
stop_server

# Slots kept and saved: the same request twice reuses the first's cells (usage says how many);
# a slot saved to --slot-save-path, erased and restored serves the request from the file's
# cells. Filenames that would leave the folder are 400s; without the folder, 501.
json_field() {  # json_field FILE EXPR: a field of a JSON file (EXPR in JavaScript, on `j`)
    node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(eval(process.argv[2]))' "$1" "$2"
}
post() {  # post PATH BODY: the status code; the body in $tmp/body
    curl -s -o "$tmp/body" -w '%{http_code}' -d "$2" "$url$1"
}
mkdir -p "$tmp/slots"
start_server --parallel 1 --ctx-size 512 --slot-save-path "$tmp/slots"
request='{"prompt": "Once upon a time, there was a little girl", "max_tokens": 12, "temperature": 0}'
[ "$(post /v1/completions "$request")" = 200 ] || fail "completion: $(cat "$tmp/body")"
cp "$tmp/body" "$tmp/first"
n_prompt=$(json_field "$tmp/first" j.usage.prompt_tokens)
[ "$(json_field "$tmp/first" j.usage.prompt_tokens_details.cached_tokens)" = 0 ] || fail "cached at first"
[ "$(post /v1/completions "$request")" = 200 ] || fail "again: $(cat "$tmp/body")"
[ "$(json_field "$tmp/body" j.usage.prompt_tokens_details.cached_tokens)" = $((n_prompt - 1)) ] ||
    fail "the second request did not reuse the cells: $(cat "$tmp/body")"
[ "$(json_field "$tmp/body" 'j.choices[0].text')" = "$(json_field "$tmp/first" 'j.choices[0].text')" ] ||
    fail "a cached prompt answered differently"
# The slot holds the prompt and every answer token that was decoded: all but a last one cut by
# max_tokens.
n_cells=$(json_field "$tmp/body" \
    'j.usage.prompt_tokens + j.usage.completion_tokens - (j.choices[0].finish_reason == "length")')
[ "$(post '/slots/0?action=save' '{"filename": "story.bin"}')" = 200 ] || fail "save: $(cat "$tmp/body")"
n_saved=$(json_field "$tmp/body" j.n_saved)
[ "$n_saved" = "$n_cells" ] && [ -s "$tmp/slots/story.bin" ] ||
    fail "saved $n_saved tokens: $(cat "$tmp/body")"
[ "$(post '/slots/0?action=erase' '')" = 200 ] && [ "$(json_field "$tmp/body" j.n_erased)" = "$n_saved" ] ||
    fail "erase: $(cat "$tmp/body")"
[ "$(post '/slots/0?action=restore' '{"filename": "story.bin"}')" = 200 ] &&
    [ "$(json_field "$tmp/body" j.n_restored)" = "$n_saved" ] || fail "restore: $(cat "$tmp/body")"
[ "$(post /v1/completions "$request")" = 200 ] &&
    [ "$(json_field "$tmp/body" j.usage.prompt_tokens_details.cached_tokens)" = $((n_prompt - 1)) ] ||
    fail "the restored cells were not used: $(cat "$tmp/body")"
for name in '../escape.bin' 'sub/x.bin' '.hidden' ''; do
    code=$(post '/slots/0?action=save' "{\"filename\": \"$name\"}")
    [ "$code" = 400 ] || fail "filename '$name': $code $(cat "$tmp/body")"
done
[ ! -e "$tmp/escape.bin" ] || fail "a save left the folder"
[ "$(post '/slots/0?action=restore' '{"filename": "nothing.bin"}')" = 404 ] || fail "a missing file"
[ "$(post '/slots/5?action=erase' '')" = 400 ] || fail "a slot that does not exist"
[ "$(post '/slots/0?action=explode' '')" = 400 ] || fail "an unknown action"

# Constrained output: response_format json_schema (OpenAI's), json_object, json_schema and grammar
# (llama.cpp's). The answers parse, and python3-jsonschema (the reference validator) finds each
# valid under its schema, whatever the seed draws; a schema the converter cannot express is a 400
# naming the field.
py=$(for p in /usr/bin/python3 python3; do "$p" -c 'import jsonschema' 2>/dev/null && { echo "$p"; break; }; done)
[ -n "$py" ] || fail "no python3 with jsonschema: make setup installs python3-jsonschema"
schema='{"type": "object", "properties": {"title": {"type": "string", "maxLength": 12},
         "year": {"type": "integer", "minimum": 1900, "exclusiveMaximum": 2100}, "tags": {"type": "array", "items": {"enum": ["a", "b"]},
         "maxItems": 3}}, "required": ["title", "year"]}'
for seed in 1 2 3 4; do
    body="{\"messages\": [{\"role\": \"user\", \"content\": \"A book?\"}], \"seed\": $seed,
           \"max_tokens\": 400, \"response_format\": {\"type\": \"json_schema\",
           \"json_schema\": {\"name\": \"book\", \"strict\": true, \"schema\": $schema}}}"
    [ "$(post /v1/chat/completions "$body")" = 200 ] || fail "json_schema: $(cat "$tmp/body")"
    [ "$(json_field "$tmp/body" 'j.choices[0].finish_reason')" = stop ] || fail "unfinished: $(cat "$tmp/body")"
    "$py" -c 'import json, sys, jsonschema
jsonschema.validate(json.loads(json.load(open(sys.argv[1]))["choices"][0]["message"]["content"]),
                    json.loads(sys.argv[2]))' "$tmp/body" "$schema" || fail "seed $seed: $(cat "$tmp/body")"
done
[ "$(post /v1/completions '{"prompt": "Data:", "max_tokens": 400, "seed": 5, "json_schema": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 6}}')" = 200 ] &&
    "$py" -c 'import json, sys
v = json.loads(json.load(open(sys.argv[1]))["choices"][0]["text"])
assert isinstance(v, list) and v and all(isinstance(x, bool) for x in v)' "$tmp/body" ||
    fail "json_schema: $(cat "$tmp/body")"
# Any object may run past max_tokens; one that ends is a JSON object, and one cut short starts as one.
[ "$(post /v1/completions '{"prompt": "Data:", "max_tokens": 400, "seed": 6, "response_format": {"type": "json_object"}}')" = 200 ] &&
    "$py" -c 'import json, sys
c = json.load(open(sys.argv[1]))["choices"][0]
assert c["text"].startswith("{")
assert c["finish_reason"] == "length" or isinstance(json.loads(c["text"]), dict)' "$tmp/body" ||
    fail "json_object: $(cat "$tmp/body")"
[ "$(post /v1/completions '{"prompt": "Answer:", "max_tokens": 50, "grammar": "root ::= \"yes\" | \"no\""}')" = 200 ] &&
    [[ "$(json_field "$tmp/body" 'j.choices[0].text')" =~ ^(yes|no)$ ]] || fail "grammar: $(cat "$tmp/body")"
[ "$(post /v1/completions '{"prompt": "a", "json_schema": {"type": "string", "pattern": "(?=x)"}}')" = 400 ] &&
    [ "$(json_field "$tmp/body" j.error.param)" = json_schema ] &&
    grep -q "lookarounds" "$tmp/body" || fail "a refused schema: $(cat "$tmp/body")"
[ "$(post /v1/completions '{"prompt": "a", "json_schema": {}, "grammar": "root ::= \"a\""}')" = 400 ] ||
    fail "two constraints: $(cat "$tmp/body")"
stop_server

# Tool calls through the openai client, on a template in each of these forms: Hermes's
# <tool_call> (a template of ours), and the real templates of Mistral Nemo ([TOOL_CALLS] list),
# gpt-oss (harmony channels), Qwen3-Coder and MiniMax M2 (XML), Kimi K2 and Functionary v3.2.
tools_on_template() {  # tools_on_template TEMPLATE_FILE FORM CTX_SIZE
    [ -f "$1" ] || fail "missing $1 (../shared beside the repository)"
    "$loom" gguf set "$model" "$tmp/tools.gguf" --string-file tokenizer.chat_template="$1"
    model="$tmp/tools.gguf" start_server --parallel 2 --ctx-size "$3"
    node "$root/tests/serve/tools_test.mjs" "$url" "$2" || fail "tool calls, the $2 form"
    stop_server
    rm -f "$tmp/tools.gguf"
}
templates="$root/../shared/fixtures/chat-templates"
tools_on_template "$root/tests/serve/hermes_tools.jinja" hermes 2048
tools_on_template "$templates/mistralai-Mistral-Nemo-Instruct-2407/template.jinja" mistral_list 2048
tools_on_template "$templates/openai-gpt-oss-120b/template.jinja" harmony 2048
# Qwen3-Coder's tool prompt is 1,037 tokens in this vocabulary.
tools_on_template "$templates/Qwen3-Coder/template.jinja" qwen3_coder 4096
tools_on_template "$templates/MiniMax-M2/template.jinja" minimax_m2 4096
tools_on_template "$templates/moonshotai-Kimi-K2/template.jinja" kimi_k2 2048
tools_on_template "$templates/meetkai-functionary-medium-v3.2/template.jinja" functionary_v32 4096

# A thinking model's answer: a template that opens <think> in the generation prompt, the output
# forced by a grammar. The block goes to reasoning_content and the rest to content, streamed or
# not; with --reasoning-format none (or "reasoning_format": "none") the answer stays as written.
printf '%s\n' '{% for m in messages %}{{ m.role }}: {{ m.content }}' '{% endfor %}assistant: <think>' \
    >"$tmp/think.jinja"
"$loom" gguf set "$model" "$tmp/think.gguf" --string-file tokenizer.chat_template="$tmp/think.jinja"
think='"messages": [{"role": "user", "content": "Why?"}], "max_tokens": 100,
       "grammar": "root ::= \"I think.\" \"</think>\" \" The answer.\""'
model="$tmp/think.gguf" start_server --parallel 1 --ctx-size 512
[ "$(post /v1/chat/completions "{$think}")" = 200 ] &&
    [ "$(json_field "$tmp/body" 'j.choices[0].message.reasoning_content')" = "I think." ] &&
    [ "$(json_field "$tmp/body" 'j.choices[0].message.content')" = "The answer." ] ||
    fail "reasoning_content: $(cat "$tmp/body")"
curl -sN -d "{$think, \"stream\": true}" "$url/v1/chat/completions" >"$tmp/sse"
parts=$(node -e 'let r = "", c = "";
    for (const line of require("fs").readFileSync(process.argv[1], "utf8").split("\n")) {
        if (!line.startsWith("data: {")) continue;
        const d = JSON.parse(line.slice(6)).choices[0].delta;
        r += d.reasoning_content ?? ""; c += d.content ?? ""; }
    console.log(JSON.stringify([r, c]))' "$tmp/sse")
[ "$parts" = '["I think.","The answer."]' ] || fail "streamed reasoning: $parts $(cat "$tmp/sse")"
stop_server
model="$tmp/think.gguf" start_server --parallel 1 --ctx-size 512 --reasoning-format none
[ "$(post /v1/chat/completions "{$think}")" = 200 ] &&
    [ "$(json_field "$tmp/body" 'j.choices[0].message.content')" = "I think.</think> The answer." ] &&
    [ "$(json_field "$tmp/body" 'j.choices[0].message.reasoning_content')" = undefined ] ||
    fail "--reasoning-format none: $(cat "$tmp/body")"
# ... and per request, either way (llama-server's reasoning_format field).
[ "$(post /v1/chat/completions "{$think, \"reasoning_format\": \"deepseek\"}")" = 200 ] &&
    [ "$(json_field "$tmp/body" 'j.choices[0].message.reasoning_content')" = "I think." ] ||
    fail "reasoning_format deepseek: $(cat "$tmp/body")"
[ "$(post /v1/chat/completions "{$think, \"reasoning_format\": \"sometimes\"}")" = 400 ] &&
    [ "$(json_field "$tmp/body" j.error.param)" = reasoning_format ] ||
    fail "a bad reasoning_format: $(cat "$tmp/body")"
stop_server

# llama-server's /props, /slots (with --slots) and /apply-template; /v1/embeddings is a 501 for a
# model that generates text; CORS for the origins given: a preflight answered without the key,
# the header on answers to them, nothing for other origins.
start_server --parallel 2 --ctx-size 512 --slots --cors http://app.example --api-key k
get() {  # get PATH [CURL ARGS...]: the status code; the body in $tmp/body, headers in $tmp/headers
    local path=$1
    shift
    curl -s -D "$tmp/headers" -o "$tmp/body" -w '%{http_code}' -H 'Authorization: Bearer k' "$@" "$url$path"
}
[ "$(get /props)" = 200 ] && [ "$(json_field "$tmp/body" j.total_slots)" = 2 ] &&
    [ "$(json_field "$tmp/body" j.default_generation_settings.n_ctx)" = 256 ] &&
    [ "$(json_field "$tmp/body" j.chat_template)" = "" ] || fail "props: $(cat "$tmp/body")"
[ "$(get /v1/completions -d '{"prompt": "Once upon a time", "max_tokens": 4}')" = 200 ] ||
    fail "completion: $(cat "$tmp/body")"
[ "$(get /slots)" = 200 ] && [ "$(json_field "$tmp/body" j.length)" = 2 ] &&
    [ "$(json_field "$tmp/body" 'j.filter((s) => !s.is_processing && s.n_ctx === 256).length')" = 2 ] &&
    [ "$(json_field "$tmp/body" 'j.reduce((n, s) => n + s.n_cached_tokens, 0)')" -gt 4 ] ||
    fail "slots: $(cat "$tmp/body")"
[ "$(get /apply-template -d '{"messages": [{"role": "user", "content": "hi"}]}')" = 200 ] &&
    [ "$(json_field "$tmp/body" 'JSON.stringify(j.prompt)')" = '"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"' ] ||
    fail "apply-template: $(cat "$tmp/body")"
[ "$(get /apply-template -d '{"messages": [{"role": "robot", "content": "hi"}]}')" = 400 ] ||
    fail "apply-template of a bad role: $(cat "$tmp/body")"
[ "$(get /v1/embeddings -d '{"input": "hi"}')" = 501 ] && grep -q "embedding" "$tmp/body" ||
    fail "embeddings: $(cat "$tmp/body")"
[ "$(get /v1/chat/completions -X OPTIONS -H 'Origin: http://app.example' \
      -H 'Access-Control-Request-Method: POST' -H 'Authorization:')" = 204 ] &&
    grep -qi '^Access-Control-Allow-Origin: http://app.example' "$tmp/headers" &&
    grep -qi '^Access-Control-Allow-Headers: .*Authorization' "$tmp/headers" ||
    fail "preflight: $(cat "$tmp/headers")"
[ "$(get /v1/models -H 'Origin: http://app.example')" = 200 ] &&
    grep -qi '^Access-Control-Allow-Origin: http://app.example' "$tmp/headers" ||
    fail "CORS header: $(cat "$tmp/headers")"
[ "$(get /v1/models -H 'Origin: http://evil.example')" = 200 ] &&
    ! grep -qi '^Access-Control-Allow-Origin' "$tmp/headers" || fail "CORS for another origin"
[ "$(get /v1/models -X OPTIONS -H 'Origin: http://evil.example')" = 403 ] ||
    fail "a preflight from another origin"
stop_server
start_server --parallel 1 --ctx-size 256
[ "$(post '/slots/0?action=erase' '')" = 501 ] && grep -q -- "--slot-save-path" "$tmp/body" ||
    fail "slots without a folder: $(cat "$tmp/body")"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$url/slots")
[ "$code" = 501 ] && grep -q -- "--slots" "$tmp/body" || fail "GET /slots without --slots: $code"
code=$(curl -s -D "$tmp/headers" -o /dev/null -w '%{http_code}' -H 'Origin: http://app.example' "$url/v1/models")
[ "$code" = 200 ] && ! grep -qi '^Access-Control-Allow-Origin' "$tmp/headers" || fail "CORS without --cors"
stop_server
start_server --parallel 1 --ctx-size 256 --no-webui
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/")
[ "$code" = 404 ] || fail "GET / with --no-webui: $code"
stop_server

# An embedding model (llama.cpp's bert fixture): /v1/embeddings through the openai client.
bert="$root/../shared/fixtures/bert"
[ -f "$bert/model.gguf" ] || fail "missing $bert (../shared beside the repository)"
model="$bert/model.gguf" start_server --parallel 1 --ctx-size 256
node "$root/tests/serve/embeddings_test.mjs" "$url" "$bert/case.json" || fail "embeddings"
stop_server
# --pooling cls: the [CLS] token's state (llama.cpp's row 0), normalised.
model="$bert/model.gguf" start_server --parallel 1 --ctx-size 256 --pooling cls
node -e '
const fs = require("fs");
const [url, dir] = process.argv.slice(1);
const fixture = JSON.parse(fs.readFileSync(dir + "/case.json"));
const n = fixture.n_embd;
const states = new Float32Array(fs.readFileSync(dir + "/" + fixture.token_embeddings_file).buffer.slice(0));
const row0 = Array.from(states.slice(0, n));
const norm = Math.hypot(...row0);
fetch(url + "/v1/embeddings", { method: "POST", headers: { "Content-Type": "application/json" },
                                body: JSON.stringify({ input: fixture.prompt_text }) })
  .then((r) => r.json()).then((r) => {
    const got = r.data[0].embedding;
    got.forEach((x, i) => { if (Math.abs(x - row0[i] / norm) > 1e-5) throw new Error("cls " + i); });
  }).catch((e) => { console.error(e); process.exit(1); });
' "$url" "$bert" || fail "--pooling cls"
stop_server
# A reranker: the synthetic BERT with a classifier head whose scores llama.cpp gave
# (tests/engine/model/encoders/bert-rank.json, written again from its synth arguments).
cases="$root/tests/engine/model/encoders"
mapfile -t synth < <(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["synth"]))' "$cases/bert-rank.json")
"$loom" gguf synth --vocab "$root/../shared/models/vocab/ggml-vocab-bert-bge.gguf" --type F32 \
    "${synth[@]}" "$tmp/rerank.gguf" >/dev/null || fail "writing the reranker"
model="$tmp/rerank.gguf" start_server --parallel 1 --ctx-size 256
node "$root/tests/serve/rerank_test.mjs" "$url" "$cases/bert-rank.json" "$cases/pairs.txt" ||
    fail "rerank"
stop_server
# --n-predict caps what a request generates, max_tokens below it stays.
start_server --parallel 1 --ctx-size 512 --n-predict 7
for want in 7:'"logit_bias": {"2": -100}' 3:'"max_tokens": 3' 7:'"max_tokens": 50, "logit_bias": {"2": -100}'; do
    curl -s -o "$tmp/body" -d "{\"prompt\": \"Once\", ${want#*:}}" "$url/v1/completions"
    grep -q "\"completion_tokens\":${want%%:*}," "$tmp/body" || fail "--n-predict 7 with ${want#*:}: $(cat "$tmp/body")"
done
stop_server
# Slow clients: a 408 for a head or a body that arrives too slowly, nothing for one within limits.
start_server --parallel 1 --ctx-size 512 --header-timeout 1 --body-min-rate 50
python3 "$root/tests/serve/slow_clients.py" "$port" || fail "slow clients"
stop_server

# Shutdown: SIGHUP is ignored mid-request; SIGTERM lets the request in flight finish (new ones
# get 503) and exits 0; with a short --shutdown-timeout the request left is cancelled, still 0.
long='{"prompt": "Once upon a time", "max_tokens": 2000, "logit_bias": {"2": -100}}'
# Until the slot has taken the long request: signalled before that (a loaded CI machine can take
# longer than a fixed sleep to get it there), the server has nothing to drain and is gone.
wait_processing() {
    for _ in $(seq 200); do
        curl -s "$url/slots" | grep -q '"is_processing":true' && return 0
        sleep 0.05
    done
    fail "the long request never reached the slot"
}
start_server --parallel 1 --ctx-size 4096 --shutdown-timeout 20 --slots
curl -s -o "$tmp/long1" -d "$long" "$url/v1/completions" &
client=$!
wait_processing
kill -HUP "$pid"
sleep 0.2
kill -0 "$pid" 2>/dev/null || fail "SIGHUP stopped the server"
kill -TERM "$pid"
sleep 0.2
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -d '{"prompt": "a"}' "$url/v1/completions" || true)
[ "$code" = 503 ] && grep -q "shutting down" "$tmp/body" || fail "a request while draining: $code"
wait "$client"
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
         if (r.usage?.completion_tokens !== 2000) { console.error(JSON.stringify(r.usage ?? r).slice(0, 300)); process.exit(1); }' \
    "$tmp/long1" || fail "the request in flight did not finish after SIGTERM"
wait "$pid" || fail "exit code $? after draining: $(cat "$tmp/server.log")"
pid=""
start_server --parallel 1 --ctx-size 4096 --shutdown-timeout 0.2 --slots
curl -s -o "$tmp/long2" -d "$long" "$url/v1/completions" &
client=$!
wait_processing
started=$(date +%s%N)
kill -TERM "$pid"
wait "$pid" || fail "exit code $? after the shutdown timeout: $(cat "$tmp/server.log")"
pid=""
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
[ "$elapsed_ms" -lt 1500 ] || fail "the shutdown took $elapsed_ms ms with --shutdown-timeout 0.2"
wait "$client" || true
grep -q "shutdown timeout: cancelling" "$tmp/server.log" || fail "no note of the cancelled request"
echo "loom serve: openai client, concurrency, disconnects, errors, --parallel 1 vs 4 bit for bit, api key, slots, constrained output, tool calls, reasoning, props, apply-template, CORS, embeddings, rerank, --n-predict, 408 for slow clients, SIGHUP ignored, SIGTERM draining, and SIGINT as expected"
