package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/bench"
)

// BenchmarkServeToolCall is one process holding the bench's upstream,
// a Sluice configured as `sluice bench`'s targets and the client: what a
// tools/call costs in allocations through each stack. The difference
// between the sub-benchmarks is what governance adds (`sluice bench`
// measures CPU across processes).
func BenchmarkServeToolCall(b *testing.B) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{JSONResponse: true}))
	up := httptest.NewServer(mux)
	defer up.Close()
	for _, role := range []string{"sluice-core", "sluice-noaudit", "sluice"} {
		b.Run(role, func(b *testing.B) {
			cfg, err := parseConfig("bench policy", []byte(benchPolicy))
			if err != nil {
				b.Fatal(err)
			}
			cfg.Listen = "127.0.0.1:0"
			cfg.ShutdownTimeout = 2 * time.Second
			cfg.DataDir = b.TempDir()
			cfg.Audit.Off = role != "sluice"
			if role == "sluice-core" {
				cfg.Classifier.Provider = "off"
			}
			cfg.Upstreams = []gateway.Upstream{{Name: "bench", Transport: gateway.TransportStreamableHTTP, URL: up.URL + "/mcp"}}
			ctx, cancel := context.WithCancel(context.Background())
			addr := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(at bound) { addr <- at.Listen })
			}()
			var url string
			select {
			case a := <-addr:
				url = "http://" + a + "/mcp/bench"
			case err := <-done:
				b.Fatal(err)
			}
			defer func() {
				cancel()
				if err := <-done; err != nil {
					b.Error(err)
				}
			}()
			call := &bench.ToolCall{Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, URL: url, Tool: demo.ToolEcho, Arguments: `{"message":"hi"}`, Want: "Echo: hi"}
			if err := call.Do(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call.Do(context.Background()); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time the process has used: on a machine with
// neighbours, what a benchmark costs is better told by it than by wall
// time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
