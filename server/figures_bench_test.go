package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// These benchmarks give the figures of the reference server: tools/call
// latency and rate over the in-memory and HTTP transports beside the same
// operation made directly on the SDK, memory per idle session, and the time
// to close 1,000 sessions that each own a sandbox. Run them with
//
//	go test ./server/ -run '^$' -bench 'Figures' -benchmem

type figureRig struct {
	fake     *fakeprovider.Provider
	platform *sandbox.Platform
	srv      *server.Server
	httpSrv  *httptest.Server
}

func newFigureRig(b *testing.B) *figureRig {
	b.Helper()
	srv, p, fake := newFakeBacked(b)
	r := &figureRig{fake: fake, platform: p, srv: srv}
	b.Cleanup(func() {
		if r.httpSrv != nil {
			r.httpSrv.Close()
		}
		_ = srv.Shutdown(context.Background())
	})
	return r
}

// connect opens a session over "memory" (newline JSON on an in-memory
// pipe, as stdio) or "http" (Streamable HTTP on loopback).
func (r *figureRig) connect(b *testing.B, transport string) *mcp.ClientSession {
	b.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	var t mcp.Transport
	switch transport {
	case "memory":
		c, s := net.Pipe()
		go func() { _ = r.srv.Run(ctx, &mcp.IOTransport{Reader: s, Writer: s}) }()
		t = &mcp.IOTransport{Reader: c, Writer: c, MaxLineLength: 64 << 20} // room for a 16 MiB download
	case "http":
		if r.httpSrv == nil {
			r.httpSrv = httptest.NewServer(r.srv.HTTPHandler(nil))
		}
		t = &mcp.StreamableClientTransport{Endpoint: r.httpSrv.URL + server.MCPPath, MaxRetries: -1, DisableStandaloneSSE: true}
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func call(b *testing.B, cs *mcp.ClientSession, tool string, args any) map[string]any {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %v", tool, err, res)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

// latencies records one duration per iteration and reports p50, p99 and
// calls per second.
type latencies []time.Duration

func (l latencies) report(b *testing.B, elapsed time.Duration) {
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	if len(l) == 0 {
		return
	}
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(l))/elapsed.Seconds(), "calls/s")
}

func BenchmarkFiguresToolCall(b *testing.B) {
	for _, tool := range []string{"get_sandbox", "run_command"} {
		for _, via := range []string{"memory", "http", "sdk"} {
			b.Run(tool+"/"+via, func(b *testing.B) {
				r := newFigureRig(b)
				ctx := context.Background()
				var op func()
				if via == "sdk" {
					sbx, err := r.platform.Create(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					envd := sbx.Envd(nil)
					op = map[string]func(){
						"get_sandbox": func() {
							if _, err := sbx.RefreshInfo(ctx); err != nil {
								b.Fatal(err)
							}
						},
						"run_command": func() {
							if _, err := envd.RunOutput(ctx, "echo hello", nil); err != nil {
								b.Fatal(err)
							}
							if err := sbx.SetTimeout(ctx, 300*time.Second); err != nil { // the server renews too
								b.Fatal(err)
							}
						},
					}[tool]
				} else {
					cs := r.connect(b, via)
					defer cs.Close()
					id := call(b, cs, "create_sandbox", map[string]any{})["sandbox_id"]
					args := map[string]any{"sandbox_id": id}
					if tool == "run_command" {
						args["command"] = "echo hello"
					}
					op = func() { call(b, cs, tool, args) }
				}
				op() // warm up
				lat := make(latencies, 0, b.N)
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					t0 := time.Now()
					op()
					lat = append(lat, time.Since(t0))
				}
				elapsed := time.Since(start)
				b.StopTimer()
				lat.report(b, elapsed)
			})
		}
	}
}

func BenchmarkFiguresIdleSessionMemory(b *testing.B) {
	for _, via := range []string{"memory", "http"} {
		b.Run(via, func(b *testing.B) {
			const n = 200
			for range b.N {
				r := newFigureRig(b)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				sessions := make([]*mcp.ClientSession, n)
				for i := range sessions {
					sessions[i] = r.connect(b, via)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-bytes/session")
				for _, cs := range sessions {
					_ = cs.Close()
				}
			}
		})
	}
}

func BenchmarkFiguresClose1000Sessions(b *testing.B) {
	const n = 1000
	for range b.N {
		b.StopTimer()
		r := newFigureRig(b)
		sessions := make([]*mcp.ClientSession, n)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range sessions {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				sessions[i] = r.connect(b, "memory")
				call(b, sessions[i], "create_sandbox", map[string]any{})
			}()
		}
		wg.Wait()
		if r.fake.LiveCount() != n {
			b.Fatalf("%d live sandboxes, want %d", r.fake.LiveCount(), n)
		}
		b.StartTimer()
		start := time.Now()
		for _, cs := range sessions {
			go cs.Close()
		}
		for r.fake.LiveCount() > 0 {
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-to-close-1000")
	}
}
