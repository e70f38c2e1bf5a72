# syntax=docker/dockerfile:1
#
# The Flagpole image: a drop-in for the Flagsmith Edge Proxy image (port 8000, config.json in
# /app or at $CONFIG_PATH, every top-level key also as an environment variable).
#
#   docker build -t flagpole .
#   docker run -p 8000:8000 -v ./config.json:/app/config.json:ro flagpole
#
# Build stage: the official Rust image (Debian 12), release binary only (no debug info: the
# release profile strips it). Run stage: distroless "cc" (Debian 12 glibc + libgcc_s: exactly
# what the binary links, no shell, no package manager), as a non-root user. The binary itself is
# the health probe (`flagpole health`). See deploy/README.md.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p flagpole \
 && mkdir -p /out/snapshots \
 && cp target/release/flagpole /out/flagpole

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/flagpole /usr/local/bin/flagpole
# For `flagpole.snapshot_dir` (warm start); mount a volume here to keep it across containers.
COPY --from=build --chown=65532:65532 /out/snapshots /var/lib/flagpole
# ./config.json is read from here, as the Edge Proxy reads /app/config.json.
WORKDIR /app
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8000
# SIGTERM: stop accepting, finish requests in flight (flagpole.shutdown_timeout_seconds, default
# 10 s), exit 0. Give `docker stop` more than that: `--stop-timeout 15`.
STOPSIGNAL SIGTERM
# Readiness on the port from ./config.json, $CONFIG_PATH or $SERVER (else 8000); a proxy started
# with `--port` needs its own HEALTHCHECK with `flagpole health --url http://127.0.0.1:<port>`.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/flagpole", "health"]
ENTRYPOINT ["/usr/local/bin/flagpole", "serve"]
