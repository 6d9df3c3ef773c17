#!/usr/bin/env bash
# A git history of a tenfold tree, for `cargo bench --bench branch_switch`:
# revisions FROM and TO of the git tree GIT_TREE (tags, or names a tag can
# have), each made tenfold as benches/tenfold.py makes it, committed in a
# new repository TARGET and tagged FROM and TO (ten times the files apart
# that the two revisions are).
#
#   benches/tenfold_git.sh /work/corpus/u-boot-git bench-v2026.07 bench-v2026.04 \
#       /work/corpus/u-boot-10x-git
#   BENCH_GIT_TREE=/work/corpus/u-boot-10x-git BENCH_FROM=bench-v2026.07 \
#       BENCH_TO=bench-v2026.04 cargo bench --bench branch_switch
set -euo pipefail

[ $# = 4 ] || { echo "usage: $0 GIT_TREE FROM TO TARGET" >&2; exit 2; }
source_tree="$1" from="$2" to="$3" target="$4"
tenfold="$(cd "$(dirname "$0")" && pwd -P)/tenfold.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

[ ! -e "$target" ] || { echo "$target exists: remove it first" >&2; exit 1; }
mkdir -p "$work/from" "$work/to" "$target"
git -C "$source_tree" archive "$from" | tar -x -C "$work/from"
git -C "$source_tree" archive "$to" | tar -x -C "$work/to"
git -C "$source_tree" diff --no-renames --name-status -z "$from" "$to" >"$work/changes"

python3 "$tenfold" "$work/from" "$target"
cd "$target"
git init -q
git config user.name bench
git config user.email bench@localhost
git config gc.auto 0
# Rotated ignore files ignore other names: every file is committed.
git add -A -f . && git commit -q -m "$from, tenfold" && git tag "$from"
python3 "$tenfold" "$work/to" "$target" "$work/changes"
git add -A -f . && git commit -q -m "$to, tenfold" && git tag "$to"
git checkout -q "$from"
echo "$target: $(git diff --name-only "$from" "$to" | wc -l) files apart" >&2
