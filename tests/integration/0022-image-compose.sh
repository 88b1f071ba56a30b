#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0022-image-compose — docker/compose.yaml read with a YAML parser (the
# docker compose CLI is not here; image-compose.py says what it checks):
# kafka from apache/kafka:3.9.x in one KRaft node, topics applied by a
# one-shot service that sluice waits for (service_completed_successfully),
# replicas that scale (no hard-coded instance id, no fixed host port),
# images pinned, a stop grace above sluice's shutdown_grace.  Then the same
# checker on broken copies, each of which it must refuse, so that it is
# seen to fail.  The services' environment and commands are run for real,
# as PID 1 in the image, by 0021.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-image.sh"
py=$(yaml_python)
repo=$(cd "$(dirname "$0")/../.." && pwd)
check=$repo/tests/integration/image-compose.py

grace=$("$SLUICE_BIN" config dump -c "$repo/docker/sluice.ini" | awk '$1 == "shutdown_grace" {print $3}')
case "$grace" in
*s) grace=${grace%s} ;;
*m) grace=$((${grace%m} * 60)) ;;
*) fail "cannot read shutdown_grace of docker/sluice.ini: '$grace'" ;;
esac
"$py" "$check" "$repo/docker/compose.yaml" "$grace" || fail "docker/compose.yaml does not pass"

# Broken copies: one edit each, and the problem the checker must name.
mkdir -p "$WORK/docker"
cp "$repo/docker/Dockerfile" "$WORK/docker/"
mutate() {
    local what=$1 expect=$2 edit=$3
    "$py" - "$repo/docker/compose.yaml" "$WORK/docker/compose.yaml" "$edit" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
s = d["services"]
exec(sys.argv[3])
yaml.safe_dump(d, open(sys.argv[2], "w"))
PY
    if out=$("$py" "$check" "$WORK/docker/compose.yaml" "$grace"); then
        fail "the checker passed a compose file with $what"
    fi
    grep -q -- "$expect" <<<"$out" || fail "with $what the checker said: $out"
    echo "refused: $what"
}
mutate "a hard-coded instance id" "SLUICE_INSTANCE_ID is hard-coded" \
    's["sluice"]["environment"]["SLUICE_INSTANCE_ID"] = "sluice-0"'
mutate "a fixed host port" "fixed host port" \
    's["sluice"]["ports"] = ["127.0.0.1:9464:9464"]'
mutate "container_name" "container_name" \
    's["sluice"]["container_name"] = "sluice"'
mutate "sluice not waiting for topics" "service_completed_successfully" \
    's["sluice"]["depends_on"] = ["topics"]'
mutate "topics not waiting for a healthy kafka" "service_healthy" \
    's["topics"]["depends_on"]["kafka"]["condition"] = "service_started"'
mutate "an unpinned broker image" "not pinned" \
    's["kafka"]["image"] = "apache/kafka:latest"'
mutate "Confluent's broker image" "Apache Kafka's own" \
    's["kafka"]["image"] = "confluentinc/cp-kafka:7.7.1"'
mutate "a short stop grace" "stop_grace_period" \
    's["sluice"]["stop_grace_period"] = "10s"'
mutate "topics service missing" "no service topics" \
    'del s["topics"]'
mutate "a bootstrap nobody advertises" "not a listener kafka advertises" \
    's["sluice"]["environment"]["SLUICE_KAFKA_BOOTSTRAP_SERVERS"] = "kafka:9092"'
echo PASS
