# The test command the README and .ci/run use. It installs what the
# end-to-end tests need (the official MCP TypeScript SDK and
# server-everything, from e2e/package-lock.json) and runs every test,
# the Helm chart's included.
.PHONY: test demo build
SHELL := /bin/bash

test:
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
	go vet ./...
	# On failure, the failing tests (and, on a timeout, the tests still running)
	# are printed again last, where a truncated CI log still shows them.
	@log=$$(mktemp); set -o pipefail; \
	if ! go test -race -count=1 -timeout 15m ./... 2>&1 | tee "$$log"; then \
	  echo "== go test failed; the failures again:"; \
	  grep -E '^(--- FAIL|FAIL\s)' "$$log"; \
	  grep -E -A8 '^panic:' "$$log" | grep -v -E '^goroutine |^$$' | head -40; \
	  rm -f "$$log"; exit 1; \
	fi; rm -f "$$log"
	# the Helm chart: lint, template, strict Kubernetes schemas (its own module)
	cd deploy/helm && go vet ./... && go test -count=1 ./...

demo:
	@echo "building sluice (the first build downloads and compiles its modules; this can take a few minutes)..."
	go build -o bin/sluice ./cmd/sluice
	bin/sluice demo

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-X main.buildRevision=$$(git rev-parse HEAD 2>/dev/null)" -o bin/sluice ./cmd/sluice
