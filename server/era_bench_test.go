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
	"syscall"
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
//	go test ./server/ -run '^$' -bench 'Eras' -benchtime 2000x
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

// BenchmarkEras runs both eras side by side on one server: for each tool
// and concurrency, short rounds of legacy calls and of modern calls
// alternate (which goes first alternates too), so that a machine whose
// load changes during the run slows both alike and the ratio stays
// meaningful. b.N is the number of calls per era. It reports each era's
// calls per second and their modern/legacy ratio; the CPU time per call
// (the whole process) and legacy's over modern's, which a busy machine
// does not distort as it does calls per second; the bytes allocated per call
// (the whole process: client, server and fake provider) and the provider
// requests per call (control plane and daemon, from the fake's journal).
func BenchmarkEras(b *testing.B) {
	for _, tool := range []string{"get_sandbox", "run_command"} {
		for _, conc := range []int{1, 8, 64} {
			b.Run(tool+"/C="+itoa(conc), func(b *testing.B) {
				benchEras(b, tool, conc)
			})
		}
	}
}

// eraRoundCalls is how many calls of one era a round makes at
// concurrency conc: enough to keep every client busy, few enough that the
// eras alternate many times a second.
func eraRoundCalls(conc int) int64 { return int64(max(32, 8*conc)) }

// eraTally is what one era's rounds added up to.
type eraTally struct {
	calls    int64
	elapsed  time.Duration
	cpu      time.Duration
	bytes    uint64
	requests int
}

func (t *eraTally) report(b *testing.B, era string) {
	b.ReportMetric(float64(t.calls)/t.elapsed.Seconds(), era+"-calls/s")
	b.ReportMetric(float64(t.cpu.Microseconds())/float64(t.calls), era+"-cpu-us/call")
	b.ReportMetric(float64(t.bytes)/float64(t.calls), era+"-B/call")
	b.ReportMetric(float64(t.requests)/float64(t.calls), era+"-provider-req/call")
}

// benchEras runs b.N calls of tool per era, in alternating rounds, each
// era's calls spread over conc clients with a sandbox each.
func benchEras(b *testing.B, tool string, conc int) {
	r := newEraRig(b)
	eras := []string{"legacy", "modern"}
	loads := map[string][]func(){}
	for _, era := range eras {
		loads[era] = eraLoad(b, r, tool, eraVersions[era], conc)
	}
	tallies := map[string]*eraTally{"legacy": {}, "modern": {}}
	b.ResetTimer()
	for round, done := 0, int64(0); done < int64(b.N); round++ {
		n := min(eraRoundCalls(conc), int64(b.N)-done)
		done += n
		order := eras
		if round%2 == 1 {
			order = []string{eras[1], eras[0]}
		}
		for _, era := range order {
			tallies[era].add(r, loads[era], n)
		}
	}
	b.StopTimer()
	for _, era := range eras {
		tallies[era].report(b, era)
	}
	l, m := tallies["legacy"], tallies["modern"]
	b.ReportMetric((float64(m.calls)/m.elapsed.Seconds())/(float64(l.calls)/l.elapsed.Seconds()), "modern/legacy")
	// CPU time per call does not depend on what else the machine runs:
	// legacy's over modern's is the calls/s ratio of a saturated server.
	b.ReportMetric((l.cpu.Seconds()/float64(l.calls))/(m.cpu.Seconds()/float64(m.calls)), "cpu-legacy/modern")
}

// add runs n calls over ops and adds their time, allocation and provider
// requests to the tally.
func (t *eraTally) add(r *eraRig, ops []func(), n int64) {
	r.fake.Journal().Reset()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := processCPU()
	start := time.Now()
	runCalls(ops, n)
	t.elapsed += time.Since(start)
	t.cpu += processCPU() - cpu
	runtime.ReadMemStats(&after)
	t.calls += n
	t.bytes += after.TotalAlloc - before.TotalAlloc
	t.requests += r.fake.Journal().Len()
}

// processCPU is the CPU time (user and system) this process has used:
// client, server and fake provider together.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// eraLoad connects conc clients of one protocol version, each with a
// sandbox of its own, and returns one call of tool per client (each called
// once already, to warm up).
func eraLoad(b *testing.B, r *eraRig, tool, version string, conc int) []func() {
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
	return ops
}

// runCalls makes n calls spread over ops, each op called by one goroutine
// at a time.
func runCalls(ops []func(), n int64) {
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
	ops := eraLoad(b, r, "get_sandbox", server.ModernProtocolVersion, conc)
	run := func(n int64) { runCalls(ops, n) }
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
