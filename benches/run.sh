#!/usr/bin/env bash
# Reproduces docs/performance.md: prepares the corpus (this project's own
# dependency tree, vendored into target/bench-corpus), makes sure ripgrep is
# there, and runs `cargo bench --bench search` (release profile).
#
#   benches/run.sh              # corpus grown to at least 250 MB
#   BENCH_CORPUS_MB=100 benches/run.sh
#   BENCH_RUNS=11 benches/run.sh
set -euo pipefail

cd "$(dirname "$0")/.."
corpus="$PWD/target/bench-corpus"
target_mb="${BENCH_CORPUS_MB:-250}"

if ! command -v rg >/dev/null 2>&1; then
    echo "installing ripgrep" >&2
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        apt-get install -y ripgrep >&2 || { apt-get update >&2 && apt-get install -y ripgrep >&2; }
    else
        cargo install --locked ripgrep >&2
    fi
fi

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

BENCH_CORPUS="$corpus" cargo bench --bench search
