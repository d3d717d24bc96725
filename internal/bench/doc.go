// Package bench measures MCP tools/call round trips through a proxy: a
// closed-loop load generator, latency percentiles, the CPU time and resident
// memory of another process read from /proc, child processes that announce
// their address, and the report that compares the targets.
//
// It backs the `sluice bench` command, which runs the upstream and each
// proxy in a child process of its own so that their CPU can be measured
// apart from the load generator's:
//
//	call := &bench.ToolCall{Client: bench.NewClient(64), URL: "http://127.0.0.1:8080/mcp/bench",
//		Tool: "echo", Arguments: `{"message":"hi"}`, Want: "Echo: hi"}
//	before, _ := bench.CPUTime(pid)
//	res := bench.Run(ctx, bench.Options{Concurrency: 32, Duration: 5 * time.Second}, call.Do)
//	after, _ := bench.CPUTime(pid)
//	fmt.Println(res.Rate(), bench.Percentile(res.Latencies, 99), (after-before)/time.Duration(res.Calls))
//
// The /proc readers work on Linux only.
package bench
