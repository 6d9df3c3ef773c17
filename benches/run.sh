#!/usr/bin/env bash
# Reproduces docs/performance.md: prepares the corpus (this project's own
# dependency tree, vendored into target/bench-corpus) and its tenfold copy
# (ten copies whose letters are rotated by 0 to 9, in target/bench-corpus-10x),
# makes sure ripgrep
# and fd are there, and runs `cargo bench --bench search` and
# `cargo bench --bench instant` (release profile).
#
#   benches/run.sh                       # corpus grown to at least 250 MB
#   BENCH_TENFOLD=0 benches/run.sh       # without the tenfold corpus
#   BENCH_RUNS=11 benches/run.sh         # runs per median (search bench)
#   BENCH_QUERIES=20 benches/run.sh      # distinct queries per kind (instant)
#   BENCH_ONLY=instant benches/run.sh    # one of the two benches
#
# A trial on any small tree, without this script:
#   BENCH_CORPUS=DIR BENCH_CORPUS_10X=/none cargo bench --bench instant
set -euo pipefail

cd "$(dirname "$0")/.."
corpus="$PWD/target/bench-corpus"
target_mb="${BENCH_CORPUS_MB:-250}"

# Debian's packages as root, else cargo install: `need COMMAND PACKAGE CRATE`.
need() {
    command -v "$1" >/dev/null 2>&1 && return
    echo "installing $2" >&2
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get install -y "$2" >&2 || { apt-get update >&2 && apt-get install -y "$2" >&2; }
    else
        cargo install --locked "$3" >&2
    fi
}
need rg ripgrep ripgrep
command -v fd >/dev/null 2>&1 || need fdfind fd-find fd-find

# The vendored sources of every crate in Cargo.lock (all platforms), from
# the local registry cache when it is warm, else from crates.io.
if [ ! -d "$corpus/vendor" ]; then
    mkdir -p "$corpus"
    cargo vendor --locked --offline "$corpus/vendor" >/dev/null 2>&1 ||
        cargo vendor --locked "$corpus/vendor" >/dev/null
fi

# Below the size the memory target names, add copies of whole crates, in
# name order, until it is reached: the same real files, more of them.
apparent_mb() { du -s --apparent-size --block-size=1M "$corpus" | cut -f1; }
if [ "$(apparent_mb)" -lt "$target_mb" ]; then
    copy=1
    while [ "$(apparent_mb)" -lt "$target_mb" ]; do
        for crate in "$corpus"/vendor/*/; do
            name="$(basename "$crate")"
            mkdir -p "$corpus/copy-$copy"
            cp -r "$crate" "$corpus/copy-$copy/$name"
            [ "$(apparent_mb)" -ge "$target_mb" ] && break
        done
        copy=$((copy + 1))
    done
fi
echo "corpus: $corpus, $(apparent_mb) MB" >&2

# Ten copies of the corpus whose content differs: copy i has its ASCII
# letters rotated by i (the statistics of real code, no hard links, no
# byte-identical files), so the index reads and holds ten times the bytes.
tenfold="$PWD/target/bench-corpus-10x"
if [ "${BENCH_TENFOLD:-1}" = 1 ]; then
    stamp="$(apparent_mb)"
    if [ ! -f "$tenfold/.distinct-from-${stamp}mb" ]; then
        rm -rf "$tenfold"
        mkdir -p "$tenfold"
        python3 - "$corpus" "$tenfold" <<'PY'
import os, string, sys
source, target = sys.argv[1], sys.argv[2]
lower, upper = string.ascii_lowercase, string.ascii_uppercase
for copy in range(10):
    rotate = bytes.maketrans(
        (lower + upper).encode(),
        (lower[copy:] + lower[:copy] + upper[copy:] + upper[:copy]).encode(),
    )
    for folder, dirs, files in os.walk(source):
        out = os.path.join(target, f"copy-{copy}", os.path.relpath(folder, source))
        os.makedirs(out, exist_ok=True)
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as file:
                data = file.read()
            with open(os.path.join(out, name), "wb") as file:
                file.write(data.translate(rotate))
PY
        touch "$tenfold/.distinct-from-${stamp}mb"
    fi
    echo "10x corpus: $tenfold" >&2
else
    tenfold="$PWD/target/no-tenfold-corpus"
fi

export BENCH_CORPUS="$corpus" BENCH_CORPUS_10X="$tenfold"
case "${BENCH_ONLY:-}" in
search) nice -n 5 cargo bench --bench search ;;
instant) nice -n 5 cargo bench --bench instant ;;
*)
    nice -n 5 cargo bench --bench search
    nice -n 5 cargo bench --bench instant
    ;;
esac
