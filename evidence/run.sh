#!/bin/sh
# The one command that regenerates evidence/ (see evidence/README.md):
#
#   evidence/run.sh               rebuild binary + image, rerun both clients, rewrite evidence/
#   evidence/run.sh --check       the same run, written to target/evidence-check/;
#                                 exit code 1 when any expectation fails (used by tests/evidence.rs)
#   evidence/run.sh --skip-build  reuse the binary and image built last time (for iterating)
#
# It installs the pinned clients once (evidence/.venv, evidence/node_modules;
# both git-ignored), builds the static release binary and the container image
# with tests/support/build-image.sh, then runs evidence/driver.py.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

check=
build=yes
for arg in "$@"; do
    case "$arg" in
        --check) check=--check ;;
        --skip-build) build= ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "evidence/run.sh: unknown argument '$arg' (allowed: --check, --skip-build)" >&2; exit 2 ;;
    esac
done

fail() { echo "evidence/run.sh: $*" >&2; exit 2; }

for tool in python3 node npm cargo; do
    command -v "$tool" >/dev/null 2>&1 || fail "'$tool' is not on PATH; it is needed (see evidence/README.md)"
done
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || fail "python3 is $(python3 --version 2>&1); the MCP Python SDK needs 3.10 or newer"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || fail "node is $(node --version); the Inspector CLI needs Node 18 or newer"

# Pinned Python SDK (and pytest for the demo's check), reinstalled only when
# requirements.txt changes.
venv=evidence/.venv
if ! cmp -s evidence/requirements.txt "$venv/.installed" 2>/dev/null; then
    echo "evidence: installing evidence/requirements.txt into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" \
        || fail "cannot create a venv (on Debian/Ubuntu: apt-get install python3-venv)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --cache-dir "$repo/target/pip-cache" -r evidence/requirements.txt
    cp evidence/requirements.txt "$venv/.installed"
fi

# Pinned Inspector CLI, from the lock file, reinstalled only when it changes.
modules=evidence/node_modules
if ! cmp -s evidence/package-lock.json "$modules/.installed" 2>/dev/null; then
    echo "evidence: installing the MCP Inspector into $modules (npm ci)" >&2
    (cd evidence && npm ci --no-audit --no-fund --loglevel=error --cache "$repo/target/npm-cache")
    cp evidence/package-lock.json "$modules/.installed"
fi

if [ -n "$build" ]; then
    echo "evidence: building the release binary and the image (tests/support/build-image.sh)" >&2
    tests/support/build-image.sh
fi

exec "$venv/bin/python" evidence/driver.py $check
