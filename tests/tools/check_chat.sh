#!/usr/bin/env bash
# `loom chat` end to end on stories260K (which has no chat template of its own): two user turns,
# /reset and the first turn again, piped through stdin; one answer line per turn, the same answer
# after /reset as at the start, the same output twice (greedy), a conversation too long for the
# context refused with a message, and the errors for a missing or unknown template.
# Usage: check_chat.sh LOOM_BINARY REPO_ROOT
source "$(dirname "$0")/stories_test_setup.sh"

chat() {  # chat ARGS...: the conversation below, stdout to $tmp/out, stderr to $tmp/err
    printf 'Hello\nOnce upon a time\n/reset\nHello\n' |
        "$loom" chat -m "$model" --chat-template chatml -n 8 --temp 0 "$@" >"$tmp/out" 2>"$tmp/err"
}

chat || fail "loom chat exited non-zero: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "expected 3 answers: $(cat "$tmp/out")"
mapfile -t answers <"$tmp/out"
for i in 0 1 2; do
    [ -n "${answers[$i]// /}" ] || fail "answer $((i + 1)) is empty: $(cat "$tmp/out")"
done
[ "${answers[0]}" = "${answers[2]}" ] ||
    fail "the first answer after /reset differs: '${answers[0]}' vs '${answers[2]}'"
grep -q "template chatml" "$tmp/err" || fail "banner: $(cat "$tmp/err")"
grep -q "conversation cleared" "$tmp/err" || fail "/reset message: $(cat "$tmp/err")"
first=$(cat "$tmp/out")
chat || fail "second run exited non-zero"
[ "$(cat "$tmp/out")" = "$first" ] || fail "greedy output changed: $(cat "$tmp/out")"

# A system prompt changes the conversation, so the first answer is allowed to change, but it runs.
chat --system-prompt "You tell stories." || fail "--system-prompt: $(cat "$tmp/err")"

# A context too small for the rendered conversation: a message, no answer, exit 0.
chat -c 16 || fail "-c 16 exited non-zero: $(cat "$tmp/err")"
grep -q "no longer fits the context of 16 tokens; /reset" "$tmp/err" ||
    fail "context-full message: $(cat "$tmp/err")"

expect_error() {  # expect_error PATTERN ARGS...: exit 1 and PATTERN on stderr
    local pattern="$1" rc=0
    shift
    "$loom" chat "$@" </dev/null >/dev/null 2>"$tmp/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "exit code $rc for: $*"
    grep -Eq "$pattern" "$tmp/err" || fail "message for $*: $(cat "$tmp/err")"
}
expect_error "^loom chat: error: \[chat\] the model has no chat template .*pass --chat-template NAME, one of: chatml, " \
    -m "$model"
expect_error "^loom chat: error: \[chat\] unknown --chat-template 'nope'; the names are: chatml, " \
    -m "$model" --chat-template nope
echo "loom chat: turns, /reset, determinism and errors as expected"
