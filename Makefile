# The test command the README and .ci/run use. It installs what the
# end-to-end tests need (the official MCP TypeScript SDK and
# server-everything, from e2e/package-lock.json) and runs every test,
# the Helm chart's included.
.PHONY: test demo build

test:
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
	go vet ./...
	go test -race -count=1 -timeout 15m ./...
	# the Helm chart: lint, template, strict Kubernetes schemas (its own module)
	cd deploy/helm && go vet ./... && go test -count=1 ./...

demo:
	@echo "building sluice (the first build downloads and compiles its modules; this can take a few minutes)..."
	go build -o bin/sluice ./cmd/sluice
	bin/sluice demo

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-X main.buildRevision=$$(git rev-parse HEAD 2>/dev/null)" -o bin/sluice ./cmd/sluice
