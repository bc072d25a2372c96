#!/usr/bin/env bash
# `loom template` end to end: the exact prompt of a template file (no newline added), the
# generation prompt, BOS / EOS texts, --now for strftime_now, tools, tool-call arguments given as
# a JSON string, a model's own template and BOS text (-m), and exit 1 with the message for a
# template that raises, one that does not parse, a model without a template and bad input.
# Usage: check_template.sh LOOM_BINARY REPO_ROOT
source "$(dirname "$0")/stories_test_setup.sh"

cat >"$tmp/t.jinja" <<'JINJA'
{{- bos_token }}
{%- for m in messages %}
<{{ m.role }}>{{ m.content }}
{%- if m.tool_calls %}{% for c in m.tool_calls %}[{{ c.function.name }} {{ c.function.arguments|tojson }}]{% endfor %}{% endif %}
{%- endfor %}
{%- if tools is not none %}
tools: {{ tools|map(attribute='function.name')|join(',') }}
{%- endif %}
{%- if add_generation_prompt %}
<assistant>{{ strftime_now('%d %b %Y') }}
{%- endif %}
{{- eos_token }}
JINJA
cat >"$tmp/messages.json" <<'JSON'
[{"role": "user", "content": "Hi é"},
 {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
  "function": {"name": "f", "arguments": "{\"b\": 1, \"a\": [true]}"}}]}]
JSON
echo '[{"type": "function", "function": {"name": "f", "parameters": {}}}]' >"$tmp/tools.json"

"$loom" template --file "$tmp/t.jinja" --messages "$tmp/messages.json" >"$tmp/out" ||
    fail "template exited non-zero"
# (The expected bytes are Python Jinja2's, configured as transformers configures it.)
printf '<user>Hi é<assistant>[f {"b": 1, "a": [true]}]' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "plain render: $(cat "$tmp/out")"

"$loom" template --file "$tmp/t.jinja" --messages "$tmp/messages.json" --tools "$tmp/tools.json" \
    --add-generation-prompt --bos-token '<B>' --eos-token '<E>' --now 2026-12-01 >"$tmp/out" ||
    fail "template with options exited non-zero"
printf '<B><user>Hi é<assistant>[f {"b": 1, "a": [true]}]tools: f<assistant>01 Dec 2026<E>' \
    >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "render with options: $(cat "$tmp/out")"

# A model's own template (stories260K with one added), and its BOS and EOS texts.
echo '{{ bos_token }}|{{ messages[0].content }}|{{ eos_token }}' >"$tmp/m.jinja"
"$loom" gguf set "$model" "$tmp/model.gguf" --string-file tokenizer.chat_template="$tmp/m.jinja"
out=$("$loom" template -m "$tmp/model.gguf" --messages "$tmp/messages.json") ||
    fail "template -m exited non-zero"
[ "$out" = "<s>|Hi é|</s>" ] || fail "template -m: '$out'"

expect_error() {  # expect_error PATTERN ARGS...: exit 1 and PATTERN on stderr
    local pattern="$1" rc=0
    shift
    "$loom" template "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "exit code $rc for: $*"
    grep -Eq "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}
printf 'ok\n{%% if messages|length > 1 %%}{{ raise_exception("Too many turns") }}{%% endif %%}' \
    >"$tmp/raise.jinja"
expect_error '^loom template: error: \[jinja\] line 2, column 32: Too many turns$' \
    --file "$tmp/raise.jinja" --messages "$tmp/messages.json"
[ ! -s "$tmp/out" ] || fail "a failed render printed: $(cat "$tmp/out")"
printf 'a\nb\n{%% for x in messages %%}' >"$tmp/bad.jinja"
expect_error '^loom template: error: \[jinja\] line 3, column .*looking for .endfor. or .else.' \
    --file "$tmp/bad.jinja" --messages "$tmp/messages.json"
expect_error 'has no chat template \(tokenizer.chat_template\)' -m "$model" --messages "$tmp/messages.json"
expect_error "cannot read the messages file '$tmp/nope.json'" --file "$tmp/t.jinja" \
    --messages "$tmp/nope.json"
echo '[{"role": "user"' >"$tmp/broken.json"
expect_error '\[jinja\] not valid JSON' --file "$tmp/t.jinja" --messages "$tmp/broken.json"
expect_error "not a YYYY-MM-DD date" --file "$tmp/t.jinja" --messages "$tmp/messages.json" --now 2026-13
expect_error "pass either -m MODEL or --file TEMPLATE" --messages "$tmp/messages.json"
echo "loom template: renders, options, -m and errors as expected"
