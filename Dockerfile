# Multi-stage build: a static sluice binary on a distroless base, run as non-root.
#   docker build --build-arg VERSION=v0.3.0 --build-arg REVISION=$(git rev-parse HEAD) -t sluice .
FROM golang:1.26 AS build
ARG VERSION=dev
ARG REVISION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git is not in the build context (.dockerignore), so the version and
# revision come from the build arguments rather than Go's VCS stamp.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.buildVersion=${VERSION} -X main.buildRevision=${REVISION}" \
      -o /out/sluice ./cmd/sluice && mkdir -p /out/state/sluice

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="sluice" \
      org.opencontainers.image.description="MCP governance gateway: every tools/call is decided by policy before it reaches the server" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/sluicehq/sluice" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/sluice /usr/local/bin/sluice
# The data directory (events, inventory pins, the signing key), owned by the
# user that runs sluice, so that a volume mounted there starts writable.
COPY --from=build --chown=65532:65532 /out/state/sluice /var/lib/sluice
ENV XDG_STATE_HOME=/var/lib
VOLUME /var/lib/sluice
USER nonroot:nonroot
EXPOSE 8080
# distroless has no shell or curl: sluice checks its own /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/sluice", "health", "--url", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--config", "/etc/sluice/sluice.yaml", "--listen", "0.0.0.0:8080"]
