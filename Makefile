# The test command the README and .ci/run use. It installs what the
# end-to-end tests need (the official MCP TypeScript SDK and
# server-everything, from e2e/package-lock.json) and runs every test.
.PHONY: test demo build

test:
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
	go vet ./...
	go test -race -count=1 -timeout 15m ./...

demo:
	go run ./cmd/sluice demo

build:
	CGO_ENABLED=0 go build -trimpath -o bin/sluice ./cmd/sluice
