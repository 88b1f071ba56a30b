#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""image-compose.py COMPOSE_FILE SHUTDOWN_GRACE_SECONDS — reads a compose
file with a YAML parser (the docker compose CLI is not here) and checks what
`docker compose up --scale sluice=N` needs.  Prints each problem; exit 1 when
there is one, 0 with "compose: ok" otherwise.

  - services kafka, topics and sluice;
  - kafka from Apache Kafka's own image (apache/kafka:3.9.x), KRaft in one
    node (process roles broker and controller), a healthcheck, a listener
    the containers use and one published on the host's loopback for kcat;
  - every image pinned: a service that is built from docker/Dockerfile may
    name a local tag; any other names a version (x.y.z) or a digest, never
    latest or no tag;
  - topics: runs `sluice topics apply`, waits for kafka to be healthy, does
    not restart;
  - sluice: waits for topics to complete successfully; scales: no
    hard-coded SLUICE_INSTANCE_ID (two replicas would fence each other),
    the instance id from the hostname, no container_name, no fixed host
    port; stop_grace_period above sluice's shutdown_grace;
  - both point SLUICE_KAFKA_BOOTSTRAP_SERVERS at a listener kafka
    advertises.
"""
import os
import re
import sys

import yaml


def seconds(v):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(v))
    if not m or not any(m.groups()):
        return None
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def env_of(svc):
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, None) for e in env)
    return {k: (None if v is None else str(v)) for k, v in env.items()}


def main(path, grace):
    problems = []
    bad = problems.append
    with open(path) as f:
        doc = yaml.safe_load(f)
    svcs = (doc or {}).get("services") or {}
    for name in ("kafka", "topics", "sluice"):
        if name not in svcs:
            bad(f"no service {name}")
    if problems:
        return problems
    here = os.path.dirname(os.path.abspath(path))

    for name, svc in svcs.items():
        image = svc.get("image")
        build = svc.get("build")
        if build:
            b = build if isinstance(build, dict) else {"context": build}
            ctx = os.path.normpath(os.path.join(here, b.get("context", ".")))
            df = os.path.join(ctx, b.get("dockerfile", "Dockerfile"))
            if not os.path.isfile(df):
                bad(f"{name}: build dockerfile {df} does not exist")
            elif os.path.relpath(df, ctx) != "docker/Dockerfile":
                bad(f"{name}: builds {df}, not docker/Dockerfile of the repo root")
            if image and (":" not in image or image.endswith(":latest")):
                bad(f"{name}: the built image is tagged {image}: name a tag, not latest")
        elif not image:
            bad(f"{name}: neither image nor build")
        elif "@sha256:" not in image and not re.search(r":\d+\.\d+\.\d+$", image):
            bad(f"{name}: image {image} is not pinned to a version or digest")

    kafka = svcs["kafka"]
    if not re.fullmatch(r"apache/kafka:3\.9\.\d+(@sha256:[0-9a-f]{64})?", str(kafka.get("image"))):
        bad(f"kafka: image {kafka.get('image')} is not Apache Kafka's own apache/kafka:3.9.x")
    kenv = env_of(kafka)
    roles = set((kenv.get("KAFKA_PROCESS_ROLES") or "").split(","))
    if roles != {"broker", "controller"}:
        bad("kafka: not a single KRaft node (KAFKA_PROCESS_ROLES broker,controller)")
    if not kafka.get("healthcheck"):
        bad("kafka: no healthcheck, so service_healthy cannot hold the topics service")
    advertised = {a.split("://", 1)[1] for a in (kenv.get("KAFKA_ADVERTISED_LISTENERS") or "").split(",") if "://" in a}
    if not any(str(p).startswith("127.0.0.1:9092:") for p in kafka.get("ports") or []) or "localhost:9092" not in advertised:
        bad("kafka: no listener for kcat on the host (127.0.0.1:9092 published, localhost:9092 advertised)")

    topics = svcs["topics"]
    cmd = topics.get("command") or []
    if isinstance(cmd, str):
        cmd = cmd.split()
    if cmd[:2] != ["topics", "apply"]:
        bad(f"topics: command {cmd} is not `topics apply`")
    dep = (topics.get("depends_on") or {})
    if not isinstance(dep, dict) or (dep.get("kafka") or {}).get("condition") != "service_healthy":
        bad("topics: does not wait for kafka with condition service_healthy")
    if str(topics.get("restart", "no")) != "no":
        bad("topics: a one-shot service must not restart")

    s = svcs["sluice"]
    dep = s.get("depends_on") or {}
    if not isinstance(dep, dict) or (dep.get("topics") or {}).get("condition") != "service_completed_successfully":
        bad("sluice: does not wait for topics with condition service_completed_successfully")
    senv = env_of(s)
    if senv.get("SLUICE_INSTANCE_ID"):
        bad(f"sluice: SLUICE_INSTANCE_ID is hard-coded ({senv['SLUICE_INSTANCE_ID']}): "
            "--scale sluice=2 makes the replicas fence each other")
    if senv.get("SLUICE_INSTANCE_ID_FROM_HOSTNAME") in (None, "", "0"):
        bad("sluice: no SLUICE_INSTANCE_ID_FROM_HOSTNAME: replicas get no instance id of their own")
    if "container_name" in s:
        bad("sluice: container_name makes a second replica impossible")
    for p in s.get("ports") or []:
        if isinstance(p, dict):
            fixed = p.get("published")
        else:
            parts = str(p).split(":")
            fixed = parts[-2] if len(parts) >= 2 else ""
        if fixed not in (None, ""):
            bad(f"sluice: fixed host port in {p}: a second replica could not bind it")
    sg = seconds(s.get("stop_grace_period", "10s"))
    if sg is None or sg <= grace:
        bad(f"sluice: stop_grace_period {s.get('stop_grace_period', '10s (default)')} is not above "
            f"sluice's shutdown_grace ({grace} s): Docker would SIGKILL a clean shutdown")

    for name in ("topics", "sluice"):
        bs = env_of(svcs[name]).get("SLUICE_KAFKA_BOOTSTRAP_SERVERS")
        if not bs or any(b not in advertised for b in bs.split(",")):
            bad(f"{name}: SLUICE_KAFKA_BOOTSTRAP_SERVERS {bs} is not a listener kafka advertises ({sorted(advertised)})")
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    probs = main(sys.argv[1], int(sys.argv[2]))
    for p in probs:
        print(f"{sys.argv[1]}: {p}")
    if not probs:
        print("compose: ok")
    sys.exit(1 if probs else 0)
