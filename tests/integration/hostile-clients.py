#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""hostile-clients.py — slow, idle and patient HTTP clients, and a prober
that times what well-behaved clients get meanwhile (test 0506).

  hostile-clients.py flood SECS STATS TRICKLE IDLE PORT...
      On each PORT, TRICKLE connections that send one byte of a request
      head every 2 to 5 s (never finishing it within SECS; half of them
      send their first byte at once, half after 2 to 5 s) and IDLE ones
      that send nothing; every connection the server closes is opened
      again at once.  Writes STATS (JSON) when SECS are over, and
      STATS.up once every connection was open at least once.

  hostile-clients.py probe SECS STATS METRICS_PORT API_PORT TOKEN PATH
      For SECS, one request after another, each on a new connection:
      /healthz, /readyz and /metrics on METRICS_PORT, and an authenticated
      GET of PATH on API_PORT.  A request that takes over 1 s, fails or
      answers anything but 200 is a failure.  Writes STATS (JSON): per
      target the count, the worst and the median latency, the failures,
      and the largest values of the connection gauges seen in /metrics.

  hostile-clients.py deadline LIMIT STATS PORT...
      On each PORT one connection that sends a byte of a request head
      every 500 ms, never going quiet; writes, per port, how long the
      server kept it open (null: still open after LIMIT s).
"""
import json
import os
import random
import resource
import selectors
import socket
import sys
import time


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


HEAD = b"GET /v1 HTTP/1.1\r\nHost: sluice\r\nUser-Agent: slow-" + b"x" * 200


def flood(secs, stats_path, trickle, idle, ports):
    raise_fd_limit()
    sel = selectors.DefaultSelector()
    stats = {"connects": 0, "closed_by_server": 0, "connect_errors": 0,
             "max_open": 0, "ports": ports, "trickle": trickle, "idle": idle}
    conns = {}  # fd -> state
    opened_once = set()

    def open_conn(key):
        port, kind, i = key
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            stats["connect_errors"] += 1
            s.close()
            return False
        # Eager ones send their first byte as soon as they are connected.
        eager = kind == "trickle" and i % 2 == 0
        st = {"key": key, "sock": s, "sent": 0, "up": False,
              "next": time.monotonic() + (0 if eager else random.uniform(2, 5))}
        conns[s.fileno()] = st
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, st)
        stats["connects"] += 1
        return True

    def drop(st, by_server):
        sel.unregister(st["sock"])
        del conns[st["sock"].fileno()]
        st["sock"].close()
        if by_server:
            stats["closed_by_server"] += 1
        pending.append(st["key"])

    pending = [(p, kind, i) for p in ports
               for kind, n in (("trickle", trickle), ("idle", idle))
               for i in range(n)]
    total = len(pending)
    end = time.monotonic() + secs
    up_written = False
    while time.monotonic() < end:
        # Reopen what the server closed, at once.
        while pending:
            if not open_conn(pending[0]):
                break
            pending.pop(0)
        now = time.monotonic()
        for key, ev in sel.select(timeout=0.2):
            st = key.data
            s = st["sock"]
            if ev & selectors.EVENT_WRITE and not st["up"]:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    stats["connect_errors"] += 1
                    drop(st, False)
                    continue
                st["up"] = True
                opened_once.add(st["key"])
                sel.modify(s, selectors.EVENT_READ, st)
            if ev & selectors.EVENT_READ:
                try:
                    data = s.recv(4096)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    drop(st, True)
                    continue
        for st in list(conns.values()):
            if st["key"][1] != "trickle" or not st["up"] or st["next"] > now:
                continue
            st["next"] = now + random.uniform(2, 5)
            try:
                st["sock"].send(HEAD[st["sent"] % len(HEAD):][:1])
                st["sent"] += 1
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                drop(st, True)
        stats["max_open"] = max(stats["max_open"],
                                sum(1 for c in conns.values() if c["up"]))
        if not up_written and len(opened_once) == total:
            open(stats_path + ".up", "w").write("up\n")
            up_written = True
    stats["all_opened"] = len(opened_once) == total
    for st in list(conns.values()):
        st["sock"].close()
    json.dump(stats, open(stats_path, "w"))


def http_get(port, path, headers, timeout):
    """One GET on a new connection: (status, body, seconds)."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.settimeout(max(0.05, timeout - (time.monotonic() - t0)))
        req = f"GET {path} HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n"
        for k, v in headers.items():
            req += f"{k}: {v}\r\n"
        s.sendall((req + "\r\n").encode())
        buf = b""
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                raise TimeoutError("no full answer in time")
            s.settimeout(left)
            d = s.recv(65536)
            if not d:
                break
            buf += d
    finally:
        s.close()
    dt = time.monotonic() - t0
    head, _, body = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, body, dt


def probe(secs, stats_path, mport, aport, token, path):
    targets = [
        ("healthz", mport, "/healthz", {}),
        ("readyz", mport, "/readyz", {}),
        ("metrics", mport, "/metrics", {}),
        ("api", aport, path, {"Authorization": "Bearer " + token}),
    ]
    res = {t[0]: {"n": 0, "worst_s": 0.0, "lat": [], "failures": []}
           for t in targets}
    gauges = {"sluice_http_connections": 0, "sluice_api_connections": 0}
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for name, port, p, hdrs in targets:
            r = res[name]
            try:
                # 3 s to see how late a late answer is; over 1 s fails.
                status, body, dt = http_get(port, p, hdrs, 3.0)
                err = (None if status == 200 else f"status {status}" if status
                       else "closed without an answer")
            except OSError as e:
                status, body, dt, err = 0, b"", 3.0, type(e).__name__
            r["n"] += 1
            r["lat"].append(dt)
            r["worst_s"] = max(r["worst_s"], dt)
            if err is None and dt > 1.0:
                err = f"took {dt:.3f} s"
            if err:
                r["failures"].append(f"{time.strftime('%T')} {err}")
            if name == "metrics" and status == 200:
                for line in body.decode(errors="replace").splitlines():
                    k, _, v = line.partition(" ")
                    if k in gauges:
                        gauges[k] = max(gauges[k], float(v))
        time.sleep(0.1)
    for r in res.values():
        lat = sorted(r.pop("lat"))
        r["median_s"] = lat[len(lat) // 2] if lat else None
    json.dump({"targets": res, "max_gauges": gauges}, open(stats_path, "w"))
    return all(not r["failures"] for r in res.values())


def deadline(limit, stats_path, ports):
    sel = selectors.DefaultSelector()
    t0 = time.monotonic()
    out = {}
    for p in ports:
        s = socket.create_connection(("127.0.0.1", p), timeout=2)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, {"port": p, "sock": s,
                                               "sent": 0})
    nxt = t0
    while sel.get_map() and time.monotonic() - t0 < limit:
        for key, _ in sel.select(timeout=max(0, nxt - time.monotonic())):
            st = key.data
            try:
                d = st["sock"].recv(4096)
            except OSError:
                d = b""
            if not d:
                out[str(st["port"])] = round(time.monotonic() - t0, 3)
                sel.unregister(st["sock"])
                st["sock"].close()
        if time.monotonic() >= nxt:
            nxt += 0.5
            for key in list(sel.get_map().values()):
                st = key.data
                try:
                    st["sock"].send(HEAD[st["sent"] % len(HEAD):][:1])
                    st["sent"] += 1
                except OSError:
                    pass
    for key in list(sel.get_map().values()):
        out[str(key.data["port"])] = None
        key.data["sock"].close()
    json.dump(out, open(stats_path, "w"))


def main():
    mode = sys.argv[1]
    if mode == "flood":
        flood(float(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
              int(sys.argv[5]), [int(p) for p in sys.argv[6:]])
    elif mode == "probe":
        ok = probe(float(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
                   int(sys.argv[5]), sys.argv[6], sys.argv[7])
        sys.exit(0 if ok else 1)
    elif mode == "deadline":
        deadline(float(sys.argv[2]), sys.argv[3],
                 [int(p) for p in sys.argv[4:]])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
