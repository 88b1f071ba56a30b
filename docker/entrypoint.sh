#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sluice-entrypoint — the image's ENTRYPOINT: sets the member identity, then
# becomes sluice (exec), so that sluice is PID 1 and receives the runtime's
# SIGTERM itself.  Arguments are sluice's (default: run -c
# /etc/sluice/sluice.ini).
#
# SLUICE_INSTANCE_ID_FROM_HOSTNAME=1 and no SLUICE_INSTANCE_ID: the instance
# id (static group membership, and the transactional id) is the container's
# hostname.  Each replica of `docker compose up --scale sluice=N` has a
# hostname of its own (its container id), so replicas never fence each
# other, and `docker compose restart` keeps it.  In Kubernetes set
# SLUICE_INSTANCE_ID from the pod name instead (a StatefulSet's are stable).
set -eu

if [ -n "${SLUICE_INSTANCE_ID_FROM_HOSTNAME:-}" ] &&
    [ "${SLUICE_INSTANCE_ID_FROM_HOSTNAME}" != 0 ] &&
    [ -z "${SLUICE_INSTANCE_ID:-}" ]; then
    SLUICE_INSTANCE_ID=$(uname -n)
    export SLUICE_INSTANCE_ID
fi
exec /usr/local/bin/sluice "$@"
