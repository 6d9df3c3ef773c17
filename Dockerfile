# syntax=docker/dockerfile:1
#
# mcp-project-helper in a container: the MCP server on stdin/stdout, serving
# the project that is mounted (read-only) at /project.
#
#   docker run -i --rm --network none -v "$PWD:/project:ro" \
#       ghcr.io/mcp-project-helper/mcp-project-helper:latest
#
# Two ways to build it; both end in the same image: scratch, one static
# binary, user 65532, ENTRYPOINT `mcp-project-helper --root /project`.
#
# 1. From source (the default, last stage): a musl build on Alpine.
#      docker build -t mcp-project-helper .
#
# 2. `prebuilt`: no compiler, it copies an already-built static Linux binary
#    from the build context at  prebuilt/<TARGETARCH>/mcp-project-helper
#    (TARGETARCH is amd64 or arm64; the builder sets it per platform).
#      docker build --target prebuilt -f Dockerfile -t mcp-project-helper CONTEXT
#    tests/support/build-image.sh and .github/workflows/publish-image.yml
#    build this stage; `--target prebuilt` skips the Rust builder entirely.

FROM rust:1-alpine AS builder
# make: jemalloc's build (the allocator on x86_64 Linux, see Cargo.toml).
RUN apk add --no-cache musl-dev make
WORKDIR /src
COPY . .
# musl targets link statically by default, so the binary runs on scratch.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked --bin mcp-project-helper \
    && cp target/dist/mcp-project-helper /mcp-project-helper

FROM scratch AS image-base
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=https://github.com/mcp-project-helper/mcp-project-helper
LABEL org.opencontainers.image.title="mcp-project-helper" \
      org.opencontainers.image.description="MCP server (stdio) that lets a coding assistant search, read and check ONE project directory, mounted read-only at /project." \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.url="${SOURCE}" \
      org.opencontainers.image.documentation="${SOURCE}/blob/main/docs/install.md" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# A numeric user needs no /etc/passwd; 65532 is the usual "nonroot".
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/mcp-project-helper", "--root", "/project"]

FROM image-base AS prebuilt
ARG TARGETARCH
COPY prebuilt/${TARGETARCH}/mcp-project-helper /usr/local/bin/mcp-project-helper

FROM image-base AS from-source
COPY --from=builder /mcp-project-helper /usr/local/bin/mcp-project-helper
