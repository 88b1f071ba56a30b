#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0041-tools-slowproxy — the delaying TCP proxy that network-fault tests
# put in front of a broker (tests/tools/slowproxy.c), checked on its own:
# no broker, a python3 echo server behind it on 127.0.0.1 (the server
# notes when the first line of a connection, "MARK <token>", arrives).
#   1. no delay file (delay 0): 1000 lines come back intact and in order;
#   2. delay 300 ms: a round trip takes at least 600 ms (300 each way),
#      payload intact;
#   3. a client that sends a line and closes at once: the line still
#      reaches the server, at least 300 ms after it was sent (the late
#      request that arrives after its retry);
#   4. the file back at 0: round trips are fast again, under the 600 ms a
#      300 ms delay can never go below;
#   5. 20 MB echoed byte for byte, with the EOF passed on both ways;
#   6. an upstream that refuses: the client's connection is closed;
# and every connection the proxy opened it closed, and it exits 0 on
# SIGTERM.  Bounds on time are lower bounds but for 4.
source "$(dirname "$0")/lib.sh"

bin=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}/slowproxy
[ -x "$bin" ] || fail "$bin is missing: make build/tools/slowproxy (make test and make integration build it)"

cat >"$WORK/sp.py" <<'EOF'
import os, random, socket, sys, threading, time

def die(msg):
    print("sp.py: " + msg, file=sys.stderr)
    sys.exit(1)

def connect(a):
    h, p = a.rsplit(":", 1)
    s = socket.create_connection((h, int(p)), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def serve(portfile, logfile):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(128)
    log = open(logfile, "a", buffering=1)
    lock = threading.Lock()
    def handle(c):
        head, seen = b"", False
        try:
            with c:
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    if not seen:
                        head += b
                        if b"\n" in head or len(head) > 4096:
                            seen = True
                            line = head.split(b"\n", 1)[0]
                            if line.startswith(b"MARK "):
                                with lock:
                                    log.write("%d %s\n" % (time.monotonic_ns(),
                                        line[5:].decode("ascii", "replace")))
                    c.sendall(b)
        except OSError:
            pass
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()

# Sends data (then EOF) while reading the echo to its EOF.
def exchange(a, data):
    s = connect(a)
    err = []
    def send():
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            err.append(e)
    t = threading.Thread(target=send)
    t.start()
    got = bytearray()
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += b
    t.join()
    s.close()
    if err:
        die("send: %s" % err[0])
    return bytes(got)

def lines(a, n):
    want = [b"line %04d %s\n" % (i, b"x" * (i % 97)) for i in range(n)]
    got = exchange(a, b"".join(want)).splitlines(keepends=True)
    for i, w in enumerate(want):
        if i >= len(got) or got[i] != w:
            die("line %d: got %r, want %r (%d lines back)"
                % (i, got[i] if i < len(got) else None, w, len(got)))
    if len(got) != n:
        die("%d lines back, sent %d" % (len(got), n))
    print("%d lines ok" % n)

def rtt(a, token):
    s = connect(a)
    msg = b"rtt %s\n" % token.encode()
    t0 = time.monotonic_ns()
    s.sendall(msg)
    got = b""
    while not got.endswith(b"\n"):
        b = s.recv(4096)
        if not b:
            die("rtt: EOF after %r" % got)
        got += b
    t1 = time.monotonic_ns()
    s.close()
    if got != msg:
        die("rtt: got %r, sent %r" % (got, msg))
    print((t1 - t0) // 1000000)

def halfclose(a, token):
    s = connect(a)
    msg = b"MARK %s\n" % token.encode()
    t0 = time.monotonic_ns()
    s.sendall(msg)
    s.close()
    print(t0)

def expect_eof(a):
    s = connect(a)
    s.settimeout(20)
    s.sendall(b"hello\n")
    try:
        b = s.recv(100)
    except ConnectionResetError:
        b = b""
    if b:
        die("expected the connection closed, got %r" % b)
    print("closed")

def bulk(a, n):
    data = random.Random(41).randbytes(n)
    t0 = time.monotonic_ns()
    got = exchange(a, data)
    ms = (time.monotonic_ns() - t0) // 1000000
    if got != data:
        at = next((i for i in range(min(len(got), n)) if got[i] != data[i]),
                  min(len(got), n))
        die("bulk: %d bytes back of %d, first difference at %d"
            % (len(got), n, at))
    print("%d %d" % (n, ms))

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "serve":
    serve(*args)
elif cmd == "lines":
    lines(args[0], int(args[1]))
elif cmd == "rtt":
    rtt(*args)
elif cmd == "halfclose":
    halfclose(*args)
elif cmd == "expect-eof":
    expect_eof(*args)
elif cmd == "bulk":
    bulk(args[0], int(args[1]))
else:
    die("unknown command " + cmd)
EOF
sp() { timeout 120 python3 "$WORK/sp.py" "$@"; }

# Every process this test starts is killed on every way out.
declare -A BG_PIDS=()
_slowproxy_cleanup() {
    local n
    for n in "${!BG_PIDS[@]}"; do kill -9 "${BG_PIDS[$n]}" 2>/dev/null || true; done
    if [ "$1" -ne 0 ]; then
        for n in "$WORK"/proxy*.log; do
            [ -e "$n" ] || continue
            echo "--- $(basename "$n") tail ---" >&2
            tail -20 "$n" >&2
        done
    fi
}
CLEANUP_HOOKS+=(_slowproxy_cleanup)
trap 'exit 143' TERM
trap 'exit 130' INT

python3 "$WORK/sp.py" serve "$WORK/server.port" "$WORK/server.log" 2>"$WORK/server.err" &
BG_PIDS[server]=$!
disown # killed at exit without a "Killed" line
wait_until 10 test -s "$WORK/server.port" || fail "the echo server did not start: $(cat "$WORK/server.err")"
sport=$(cat "$WORK/server.port")

# proxy_start NAME UPSTREAM — a proxy on a port of its own (port 0; the
# start line says which) whose delay is $WORK/delay; sets PROXY_ADDR.
proxy_start() {
    local n=$1 up=$2 log=$WORK/proxy-$1.log
    "$bin" 127.0.0.1:0 "$up" "$WORK/delay" 2>"$log" &
    BG_PIDS[$n]=$!
    _started() {
        kill -0 "${BG_PIDS[$n]}" 2>/dev/null || fail "slowproxy exited at start: $(cat "$log")"
        grep -qE "^slowproxy: 127\.0\.0\.1:[0-9]+ -> $up\$" "$log"
    }
    wait_until 10 _started || fail "slowproxy did not log its start line"
    PROXY_ADDR=$(sed -nE "s/^slowproxy: (127\.0\.0\.1:[0-9]+) -> .*/\1/p" "$log" | head -1)
}

# delay_set MS N — writes MS to the delay file and waits until the proxy
# has logged "delay MS ms" N times (it reads the file every 100 ms).
delay_set() {
    DELAY_MS=$1 DELAY_SEEN=$2
    echo "$1" >"$WORK/delay"
    _applied() { [ "$(grep -c "^slowproxy: delay $DELAY_MS ms\$" "$WORK/proxy-p.log")" -ge "$DELAY_SEEN" ]; }
    wait_until 10 _applied || fail "the proxy did not take delay $1 ms within 10 s"
}

proxy_start p "127.0.0.1:$sport"
proxy=$PROXY_ADDR
note "proxy $proxy -> echo server 127.0.0.1:$sport"

# 1. No delay file yet: delay 0.
out=$(sp lines "$proxy" 1000) || fail "1000 lines at delay 0: $out"
echo "$out at delay 0"

# 2. 300 ms each way.
delay_set 300 1
rtt=$(sp rtt "$proxy" slow) || fail "round trip at delay 300: $rtt"
[ "$rtt" -ge 600 ] || fail "a round trip at delay 300 ms took $rtt ms (at least 600 expected)"
note "round trip at delay 300 ms: $rtt ms"

# 3. Sent, then closed at once: the line still arrives, late.
token=hc-$RANDOM-$$
sent=$(sp halfclose "$proxy" "$token") || fail "half-close client: $sent"
_arrived() { grep -q " $token\$" "$WORK/server.log"; }
wait_until 10 _arrived || fail "the line of a client that closed never reached the server"
got=$(awk -v t="$token" '$2 == t { print $1; exit }' "$WORK/server.log")
late=$(((got - sent) / 1000000))
[ "$late" -ge 300 ] || fail "the line of a client that closed arrived after $late ms (at least 300 expected)"
note "line of a closed client arrived after $late ms at delay 300 ms"

# 4. Back to 0: fast again.  The one upper bound: the best of three under
# the 600 ms that a 300 ms delay cannot go below.
delay_set 0 1
best=
for i in 1 2 3; do
    r=$(sp rtt "$proxy" "fast$i") || fail "round trip at delay 0: $r"
    [ -n "$best" ] && [ "$best" -le "$r" ] || best=$r
done
[ "$best" -lt 600 ] || fail "round trips after the delay went back to 0 still take $best ms"
note "round trip at delay 0 again: $best ms (best of 3)"

# 5. 20 MB there and back.
out=$(sp bulk "$proxy" 20000000) || fail "20 MB through the proxy: $out"
note "20 MB echoed byte for byte in ${out#* } ms"

# An empty file is delay 0 too.
delay_set 250 1
: >"$WORK/delay"
_zero_again() { [ "$(grep -c '^slowproxy: delay 0 ms$' "$WORK/proxy-p.log")" -ge 2 ]; }
wait_until 10 _zero_again || fail "an empty delay file did not set the delay to 0"

# 6. An upstream that refuses: the client is closed.
dead=$(free_port)
proxy_start dead "127.0.0.1:$dead"
out=$(sp expect-eof "$PROXY_ADDR") || fail "client of a proxy whose upstream refuses: $out"
grep -q "upstream 127.0.0.1:$dead: " "$WORK/proxy-dead.log" || fail "no upstream connect failure logged"

# Every connection opened is closed (the half-closed one too), and SIGTERM
# ends the proxy with status 0.
_all_closed() {
    local o c
    o=$(grep -c '^slowproxy: conn [0-9]* open' "$WORK/proxy-p.log")
    c=$(grep -c '^slowproxy: conn [0-9]* closed' "$WORK/proxy-p.log")
    [ "$o" -eq "$c" ]
}
wait_until 10 _all_closed || fail "connections left open: $(grep -c ' open ' "$WORK/proxy-p.log") opened, $(grep -c ' closed ' "$WORK/proxy-p.log") closed"
note "$(grep -c ' closed ' "$WORK/proxy-p.log") connections opened and closed"
for n in p dead; do
    kill -TERM "${BG_PIDS[$n]}"
    rc=0
    wait "${BG_PIDS[$n]}" || rc=$?
    unset "BG_PIDS[$n]"
    [ "$rc" -eq 0 ] || fail "slowproxy ($n) exited $rc on SIGTERM"
done
echo PASS
