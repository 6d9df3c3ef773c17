#!/bin/sh
# Builds the static Linux binary and the `prebuilt` container image from it.
# Idempotent: cargo and the image builder reuse what is already built.
#
# stdout carries exactly two lines, for scripts and tests:
#   binary=<absolute path of the static binary>
#   image=mcp-project-helper:test
# Everything else (cargo, podman/docker) goes to stderr.
#
# The container engine is chosen by tests/support/podman.sh (docker when an
# engine is running, else podman with this sandbox's settings).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
image=mcp-project-helper:test

case $(uname -m) in
    x86_64 | amd64) arch=x86_64 platform=amd64 ;;
    aarch64 | arm64) arch=aarch64 platform=arm64 ;;
    *) echo "build-image.sh: unsupported machine $(uname -m)" >&2; exit 1 ;;
esac
target=$arch-unknown-linux-gnu

cd "$repo"
# RUSTFLAGS must apply; the encoded form would take precedence over it.
unset CARGO_ENCODED_RUSTFLAGS
# --target keeps build scripts and proc-macros dynamic; only the binary is
# linked statically (glibc, crt-static), so it runs on `FROM scratch`.
RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --profile dist --locked --target "$target" --target-dir target/static >&2
binary=$repo/target/static/$target/dist/mcp-project-helper

# A small build context holding only the binary, at the path the Dockerfile's
# `prebuilt` stage expects: prebuilt/<TARGETARCH>/mcp-project-helper.
context=$repo/target/static/image-context
mkdir -p "$context/prebuilt/$platform"
if ! cmp -s "$binary" "$context/prebuilt/$platform/mcp-project-helper"; then
    cp "$binary" "$context/prebuilt/$platform/mcp-project-helper"
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
"$here/podman.sh" build --target prebuilt --platform "linux/$platform" \
    --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
    -f "$repo/Dockerfile" -t "$image" "$context" >&2

echo "binary=$binary"
echo "image=$image"
