# Multi-stage build: a static sluice binary on a distroless base, run as non-root.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/sluice ./cmd/sluice && mkdir -p /out/state/sluice

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sluice /usr/local/bin/sluice
# The data directory (events, inventory pins, the signing key), owned by the
# user that runs sluice, so that a volume mounted there starts writable.
COPY --from=build --chown=65532:65532 /out/state/sluice /var/lib/sluice
ENV XDG_STATE_HOME=/var/lib
VOLUME /var/lib/sluice
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--config", "/etc/sluice/sluice.yaml", "--listen", "0.0.0.0:8080"]
