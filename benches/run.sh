#!/usr/bin/env bash
# Reproduces docs/performance.md: prepares a corpus and its tenfold distinct
# copy (ten copies whose letters are rotated by 0 to 9), makes sure ripgrep
# and fd are there, and runs `cargo bench --bench search` and
# `cargo bench --bench instant` (release profile).
#
#   BENCH_CORPUS=/work/corpus/u-boot BENCH_CORPUS_10X=/work/corpus/u-boot-10x \
#       benches/run.sh                   # any tree and its tenfold
#   benches/run.sh                       # this project's vendored crates
#   BENCH_CORPUS_10X=/none benches/run.sh  # without a tenfold corpus
#   BENCH_RUNS=11 benches/run.sh         # runs per median (search bench)
#   BENCH_QUERIES=20 benches/run.sh      # distinct queries per kind (instant)
#   BENCH_CHANGED=0 benches/run.sh       # without the changed-tree session
#   BENCH_ONLY=instant benches/run.sh    # one of the two benches
#
# Without BENCH_CORPUS the corpus is every crate in Cargo.lock, vendored
# into target/bench-corpus (whatever size that is: no file is duplicated);
# without BENCH_CORPUS_10X the tenfold copy of the corpus is written to
# target/bench-corpus-10x.
#
# A trial on any small tree, without this script:
#   BENCH_CORPUS=DIR BENCH_CORPUS_10X=/none cargo bench --bench instant
set -euo pipefail

cd "$(dirname "$0")/.."

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

apparent_mb() { du -s --apparent-size --block-size=1M "$1" | cut -f1; }

corpus="${BENCH_CORPUS:-}"
if [ -z "$corpus" ]; then
    # The vendored sources of every crate in Cargo.lock (all platforms),
    # from the local registry cache when it is warm, else from crates.io.
    corpus="$PWD/target/bench-corpus"
    if [ ! -d "$corpus/vendor" ]; then
        mkdir -p "$corpus"
        cargo vendor --locked --offline "$corpus/vendor" >/dev/null 2>&1 ||
            cargo vendor --locked "$corpus/vendor" >/dev/null
    fi
    # Whole-crate copies an earlier version of this script added: real
    # trees hold no such duplicates.
    rm -rf "$corpus"/copy-*
fi
corpus="$(cd "$corpus" && pwd -P)"
echo "corpus: $corpus, $(apparent_mb "$corpus") MB" >&2

# Ten copies of the corpus whose content differs (benches/tenfold.py).
tenfold="${BENCH_CORPUS_10X:-}"
if [ -z "$tenfold" ]; then
    tenfold="$PWD/target/bench-corpus-10x"
    # What it was made from, beside it rather than inside the tree measured.
    made_from="$corpus $(apparent_mb "$corpus") MB"
    if [ "$(cat "$tenfold.from" 2>/dev/null)" != "$made_from" ]; then
        rm -rf "$tenfold"
        mkdir -p "$tenfold"
        python3 benches/tenfold.py "$corpus" "$tenfold"
        echo "$made_from" >"$tenfold.from"
    fi
fi
if [ -d "$tenfold" ]; then
    echo "10x corpus: $tenfold, $(apparent_mb "$tenfold") MB" >&2
else
    echo "no 10x corpus ($tenfold is not a folder)" >&2
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
