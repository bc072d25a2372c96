# Sourced by the server's shell tests, after they set $loom and $model: fail MESSAGE, $tmp (a
# folder removed at exit), start_server ARGS..., stop_server and send_all.
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# start_server ARGS...: a server of $model on a free port; sets pid and url once /health answers
# 200.
start_server() {
    "$loom" serve -m "$model" --port 0 "$@" 2>"$tmp/server.log" &
    pid=$!
    for _ in $(seq 100); do
        # The log may not exist yet: the server's shell makes it as it starts.
        port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/server.log" \
            2>/dev/null || true)
        if [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
            url="http://127.0.0.1:$port"
            return
        fi
        sleep 0.1
    done
    fail "the server did not start: $(cat "$tmp/server.log")"
}

# stop_server: SIGINT, then the exit code must be 0 within 2 s.
stop_server() {
    kill -INT "$pid"
    for _ in $(seq 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && fail "the server still runs 2 s after SIGINT"
    wait "$pid" || fail "exit code $? after SIGINT: $(cat "$tmp/server.log")"
    pid=""
}

# send_all TAG FIELDS: a completion of each of the prompts in the array $prompts at once, with
# the extra JSON FIELDS ("max_tokens": 24, ...); each answer's choices to $tmp/TAG.i, where an
# answer without any choice or text fails.
send_all() {
    local clients=()
    for i in "${!prompts[@]}"; do
        curl -s -d "{\"prompt\": \"${prompts[$i]}\", $2}" "$url/v1/completions" >"$tmp/$1.$i" &
        clients+=($!)
    done
    wait "${clients[@]}"
    for i in "${!prompts[@]}"; do
        node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
                 if (!r.choices || r.choices[0].text.length === 0) {
                     console.error(JSON.stringify(r)); process.exit(1); }
                 console.log(JSON.stringify(r.choices))' "$tmp/$1.$i" >"$tmp/$1.$i.choices" ||
            fail "answer $i with $1"
    done
}
