#!/bin/sh
# Runs `podman "$@"` with the settings these sandboxed machines need, or
# `docker "$@"` when a Docker engine is running (`docker info` succeeds).
#
#   tests/support/podman.sh run -i --rm --network none --read-only \
#       --user 65532 -v "$PWD/demo_project:/project:ro" mcp-project-helper:test
#
# podman settings (see docs/install.md, "Building the image with podman"):
# - CONTAINERS_CONF with `default_ulimits = []` (raising ulimits is refused),
# - `--storage-driver vfs` (no overlay mounts),
# - for `run`: `--runtime runc --cgroup-manager=cgroupfs` (no systemd).
set -eu

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    exec docker "$@"
fi

if ! command -v podman >/dev/null 2>&1; then
    echo "podman.sh: neither a running Docker engine nor podman was found" >&2
    exit 127
fi

if [ -z "${CONTAINERS_CONF:-}" ]; then
    conf="${TMPDIR:-/tmp}/mcp-project-helper-containers.conf"
    if [ ! -f "$conf" ]; then
        tmp=$(mktemp "$conf.XXXXXX")
        printf '[containers]\ndefault_ulimits = []\n' >"$tmp"
        mv "$tmp" "$conf"
    fi
    export CONTAINERS_CONF="$conf"
fi

if [ "${1:-}" = run ]; then
    exec podman --storage-driver vfs --runtime runc --cgroup-manager=cgroupfs "$@"
fi
exec podman --storage-driver vfs "$@"
