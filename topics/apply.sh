#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# topics/apply.sh CONFIG [TOPIC:PARTITIONS]...
#
# Creates a sluice deployment's topics and verifies them: first each extra
# TOPIC:PARTITIONS given (output topics, which sluice never creates itself;
# an existing one with that partition count is fine), then
# `sluice topics apply -c CONFIG` (every missing internal topic, never
# altering an existing one), then `sluice topics check -c CONFIG`.  Exits
# non-zero when anything is missing or wrong, so it fits a Kubernetes Job or
# a compose one-shot service.
#
# Environment: SLUICE (the binary; default: `sluice` on PATH, else ./sluice
# at the repository root), SLUICE_TOPICS_TIMEOUT (per broker request,
# default 30s), and the config's own overrides (SLUICE_KAFKA_BOOTSTRAP_SERVERS,
# ...).
#
#   topics/apply.sh topics/example.ini notify.out:6 transfers.batches:6 reminders.due:6
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'
    [ $# -ge 1 ] && exit 0 || exit 2
fi
conf=$1
shift
timeout=${SLUICE_TOPICS_TIMEOUT:-30s}
if [ -z "${SLUICE:-}" ]; then
    if command -v sluice >/dev/null 2>&1; then
        SLUICE=sluice
    else
        SLUICE=$(cd "$(dirname "$0")/.." && pwd)/sluice
    fi
fi

for spec in "$@"; do
    name=${spec%:*}
    parts=${spec##*:}
    case "$parts" in
    '' | *[!0-9]*)
        echo "apply.sh: '$spec': want TOPIC:PARTITIONS" >&2
        exit 2
        ;;
    esac
    "$SLUICE" topics create -c "$conf" --timeout "$timeout" "$name" --partitions "$parts"
done

rc=0
"$SLUICE" topics apply -c "$conf" --timeout "$timeout" || rc=$?
"$SLUICE" topics check -c "$conf" --timeout "$timeout" || rc=$?
exit "$rc"
