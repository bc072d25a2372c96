# Sourced by the server's shell tests, after they set $loom and $model: fail MESSAGE, $tmp (a
# folder removed at exit), start_server ARGS... and stop_server.
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
        port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/server.log")
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
