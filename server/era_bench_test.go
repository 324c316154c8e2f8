package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/server"
)

// These benchmarks compare the two eras over Streamable HTTP on loopback:
// calls per second of 2025 sessions and of 2026-07-28 requests, for
// get_sandbox and run_command at 1, 8 and 64 concurrent clients, each
// client with its own sandbox; and the server's heap after 100,000 modern
// requests against its idle value. Run them with
//
//	go test ./server/ -run '^$' -bench 'Eras' -benchmem
//	go test ./server/ -run '^$' -bench 'ModernHeap' -benchtime 1x

// eraRig is a server on a fake provider, served over loopback HTTP.
type eraRig struct {
	srv  *server.Server
	fake *fakeprovider.Provider
	url  string
	tr   *http.Transport
}

func newEraRig(b *testing.B) *eraRig {
	b.Helper()
	srv, _, fake := newFakeBacked(b)
	hs := httptest.NewServer(srv.HTTPHandler(&server.HTTPOptions{MaxSessionsPerClient: -1}))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	b.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	return &eraRig{srv: srv, fake: fake, url: hs.URL + server.MCPPath, tr: tr}
}

// client connects one client of the given protocol version.
func (r *eraRig) client(b *testing.B, version string) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: r.tr},
		MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// eraVersions are the two eras' protocol versions.
var eraVersions = map[string]string{"legacy": "2025-11-25", "modern": server.ModernProtocolVersion}

func BenchmarkEras(b *testing.B) {
	for _, tool := range []string{"get_sandbox", "run_command"} {
		for _, era := range []string{"legacy", "modern"} {
			for _, conc := range []int{1, 8, 64} {
				b.Run(tool+"/"+era+"/C="+itoa(conc), func(b *testing.B) {
					benchEra(b, tool, eraVersions[era], conc)
				})
			}
		}
	}
}

// benchEra runs b.N calls of tool spread over conc clients, each calling
// on its own sandbox, and reports calls per second.
func benchEra(b *testing.B, tool, version string, conc int) {
	r := newEraRig(b)
	ops := make([]func(), conc)
	for i := range ops {
		cs := r.client(b, version)
		args := map[string]any{"sandbox_id": call(b, cs, "create_sandbox", map[string]any{"timeout": 3600})["sandbox_id"]}
		if tool == "run_command" {
			args["command"] = "echo hello"
		}
		ops[i] = func() { call(b, cs, tool, args) }
		ops[i]() // warm up
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				op()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
}

// modernHeapRequests is how many modern requests BenchmarkModernHeap sends.
const modernHeapRequests = 100_000

// BenchmarkModernHeap sends 100,000 modern get_sandbox requests over HTTP
// (8 at a time) and reports the server process's live heap before (idle,
// after a warm-up) and after them, once garbage is collected: modern
// requests must leave nothing behind. It reports the server's figures, not
// a pass or fail; the benchmark itself fails only when the requests fail.
func BenchmarkModernHeap(b *testing.B) {
	r := newEraRig(b)
	const conc = 8
	ops := make([]func(), conc)
	for i := range ops {
		cs := r.client(b, server.ModernProtocolVersion)
		args := map[string]any{"sandbox_id": call(b, cs, "create_sandbox", map[string]any{"timeout": 3600})["sandbox_id"]}
		ops[i] = func() { call(b, cs, "get_sandbox", args) }
	}
	run := func(n int64) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, op := range ops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= n {
					op()
				}
			}()
		}
		wg.Wait()
	}
	run(2000) // warm up: pools, caches, connections
	idle := liveHeap(r)
	b.ResetTimer()
	n := int64(modernHeapRequests)
	if v, err := strconv.ParseInt(os.Getenv("SANDBOXKIT_HEAP_REQUESTS"), 10, 64); err == nil && v > 0 {
		n = v // a shorter run, for profiling
	}
	for range b.N {
		run(n)
	}
	b.StopTimer()
	after := liveHeap(r)
	if path := os.Getenv("SANDBOXKIT_HEAP_PROFILE"); path != "" {
		writeHeapProfile(b, path) // what is still held, for pprof
	}
	b.ReportMetric(float64(idle)/1024, "idle-heap-KiB")
	b.ReportMetric(float64(after)/1024, "after-heap-KiB")
	b.ReportMetric(float64(after-idle)/1024, "growth-KiB")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
}

// liveHeap is the live heap once idle connections are closed and garbage
// collected. It is the server's, the clients' and the fake provider's
// heap together, the fake's request journal excepted.
func liveHeap(r *eraRig) int64 {
	r.tr.CloseIdleConnections()
	// The fake provider records every request it served: not the server's.
	r.fake.Journal().Reset()
	var ms runtime.MemStats
	for range 3 {
		time.Sleep(100 * time.Millisecond) // let closed connections' goroutines end
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// writeHeapProfile writes the live heap to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
