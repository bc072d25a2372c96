"""Slow clients against a running `loom serve --header-timeout 1 --body-min-rate 50`.

Raw sockets, since an HTTP library sends a request whole: a head sent a byte every 100 ms (a
slowloris) and a body at 10 bytes a second each get a 408 naming the part that was late, while
the client is still sending; a head that pauses 0.5 s and two requests 0.7 s apart on one
keep-alive connection (each request's clock starts with its first byte) get their answers.
Usage: slow_clients.py PORT
"""

import json
import socket
import sys
import time

PORT = int(sys.argv[1])
BODY = b'{"prompt": "Once", "max_tokens": 2, "temperature": 0}'
HEAD = (
    b"POST /v1/completions HTTP/1.1\r\nHost: loom\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(BODY)
)


def fail(message):
    print(f"FAIL: slow clients: {message}")
    sys.exit(1)


def read_answer(sock):
    """One HTTP answer from the socket: (status, JSON body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            fail(f"the connection closed before an answer: {data!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ")[1])
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        chunk = sock.recv(4096)
        if not chunk:
            fail("the connection closed inside an answer")
        rest += chunk
    return status, json.loads(rest[:length])


def answered_early(sock):
    """Whether the server has sent something (its answer) without waiting for it."""
    sock.setblocking(False)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    finally:
        sock.setblocking(True)


def send_slowly(name, prefix, dribbled, pause, part):
    """Sends prefix at once, then dribbled a byte every `pause` seconds; the server must answer
    408 naming `part` before the last byte, and not before the 1 s allowed."""
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=30)
    sock.sendall(prefix)
    started = time.monotonic()
    for byte in dribbled:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break  # the server shut its end after answering
        time.sleep(pause)
        if answered_early(sock):
            break
    else:
        fail(f"{name}: sent whole in {time.monotonic() - started:.1f} s without a 408")
    seconds = time.monotonic() - started
    status, body = read_answer(sock)
    sock.close()
    message = body.get("error", {}).get("message", "")
    if status != 408 or part not in message:
        fail(f"{name}: {status} {body} (a 408 naming the {part} was expected)")
    if seconds < 0.9:
        fail(f"{name}: the 408 came after {seconds:.2f} s, before the 1 s allowed")


# A slowloris: the head alone would take 10 s.
send_slowly("a head a byte every 100 ms", b"", HEAD, 0.1, "head")
# The head at once, then the body at 10 bytes a second: under 50 once the 1 s allowance is spent.
send_slowly("a body at 10 bytes a second", HEAD, BODY, 0.1, "body")

# Within the limits: a head that pauses 0.5 s, then two requests 0.7 s apart on one connection.
sock = socket.create_connection(("127.0.0.1", PORT), timeout=30)
sock.sendall(HEAD[:20])
time.sleep(0.5)
sock.sendall(HEAD[20:] + BODY)
status, body = read_answer(sock)
if status != 200:
    fail(f"a head that paused 0.5 s: {status} {body}")
time.sleep(0.7)
sock.sendall(HEAD + BODY)
status, body = read_answer(sock)
if status != 200:
    fail(f"a second request 0.7 s later on the same connection: {status} {body}")
sock.close()
print("slow clients: 408 for a slow head and a slow body, answers within the limits")
