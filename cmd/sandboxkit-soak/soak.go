package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// config is what the flags map to.
type config struct {
	Sessions      int           // concurrent sessions
	Duration      time.Duration // how long new sessions are started
	Seed          uint64        // 0: from the clock
	EndMix        endMix        // how sessions end
	MaxCalls      int           // calls per session: 1 to MaxCalls
	IdleTimeout   time.Duration // the server's session idle timeout
	Settle        time.Duration // how long to wait for cleanup at the end
	CallTimeout   time.Duration // client-side bound of one call
	MaxHeapGrowth int64         // bytes of live heap growth tolerated after the run
	Verbose       bool
	HeapProfile   string // where to write a heap profile of the idle server after the load
	// DestroyConcurrency is the server's Limits.DestroyConcurrency (0: its default).
	DestroyConcurrency int
	// Providers is how many fake providers the sessions spread over (each
	// session creates its sandboxes at one of them); 1 is the default
	// provider alone.
	Providers int
}

func defaultConfig() config {
	return config{
		Sessions:      200,
		Duration:      30 * time.Second,
		EndMix:        endMix{"delete": 50, "idle": 25, "drop": 25},
		MaxCalls:      8,
		IdleTimeout:   3 * time.Second,
		Settle:        2 * time.Minute,
		CallTimeout:   2 * time.Minute,
		MaxHeapGrowth: 64 << 20,
	}
}

// endMix weighs the ways a session ends: "delete" (HTTP DELETE), "idle"
// (the client goes quiet and the server's idle timeout ends it) and "drop"
// (the client drops its connection in the middle of a call, then goes
// quiet).
type endMix map[string]int

func parseEndMix(s string) (endMix, error) {
	m := endMix{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || !slices.Contains([]string{"delete", "idle", "drop"}, k) {
			return nil, fmt.Errorf("end mix %q: want delete=N,idle=N,drop=N", s)
		}
		m[k] = n
	}
	if m["delete"]+m["idle"]+m["drop"] == 0 {
		return nil, fmt.Errorf("end mix %q: all weights are zero", s)
	}
	return m, nil
}

func (m endMix) String() string {
	return fmt.Sprintf("delete=%d,idle=%d,drop=%d", m["delete"], m["idle"], m["drop"])
}

func (m endMix) pick(r *rand.Rand) string {
	n := r.IntN(m["delete"] + m["idle"] + m["drop"])
	for _, k := range []string{"delete", "idle", "drop"} {
		if n < m[k] {
			return k
		}
		n -= m[k]
	}
	return "delete"
}

// report is what a run measured.
type report struct {
	Config  config
	Elapsed time.Duration // from the first session to the last call

	Sessions     int64            // sessions opened
	SessionFails int64            // sessions that could not be opened
	Ends         map[string]int64 // sessions by how they ended
	Calls        int64            // tool calls answered (success or tool error)
	ToolErrors   map[string]int64 // tool errors by category
	CallFails    int64            // calls without an answer (not counting deliberate drops)
	FailKinds    map[string]int64 // sessions that failed to open and calls without an answer, by kind
	P50, P99     time.Duration
	Max          time.Duration

	Created, Destroyed int64 // sandboxes, as the provider saw them
	PeakLive           int   // most live sandboxes at once
	Leaked             int   // live sandboxes after every session ended
	Unresolved         int   // sandboxes the server reported it could not destroy
	LiveSessionsAfter  int   // server sessions still live after the settle wait
	SettleTook         time.Duration

	GoroutinesBefore, GoroutinesIdle, GoroutinesAfter int           // idle server before load, idle server after load, after teardown vs the process before
	GoroutinesStart                                   int           // the process before anything started
	HeapBefore, HeapIdle, HeapAfter                   int64         // live heap at the same points
	PeakRSS                                           int64         // VmHWM of this process
	CPU                                               time.Duration // user+system CPU time of this process during the load
	LoadBefore, LoadAfter                             string        // the host's load averages (/proc/loadavg) around the load
	Failures                                          []string
}

// fakes are the in-process providers and the transport that routes each
// request to its provider by host name: the control plane at
// api.<provider>.soak.test and, for providers other than e2b, the
// daemons at sbx.<provider>.soak.test (the sandbox URL). The default fake
// also answers every other host (e2b's daemons). It counts the sandboxes
// the providers create and destroy.
type fakes struct {
	list               []*fakeprovider.Provider
	routes             map[string]http.RoundTripper
	config             *sandbox.Config
	env                map[string]string
	created, destroyed atomic.Int64
}

func newFakes(n int) *fakes {
	f := &fakes{routes: map[string]http.RoundTripper{}, config: &sandbox.Config{}, env: map[string]string{}}
	for i := range n {
		fp := fakeprovider.New(&fakeprovider.Options{SandboxLimit: 1 << 30})
		f.list = append(f.list, fp)
		id := providerName(i)
		if i == 0 {
			f.env[sandbox.EnvAPIKey] = fp.APIKey()
			f.env[sandbox.EnvAPIURL] = "https://api.e2b.soak.test"
			f.routes[""] = fp.RoundTripper()
		} else {
			keyEnv := strings.ToUpper(id) + "_API_KEY"
			f.env[keyEnv] = fp.APIKey()
			f.config.Providers = append(f.config.Providers, sandbox.ProviderConfig{ID: id, APIURL: "https://api." + id + ".soak.test",
				Domain: id + ".soak.test", APIKeyEnv: keyEnv, SandboxURL: "https://sbx." + id + ".soak.test"})
			f.routes["sbx."+id+".soak.test"] = fp.RoundTripper()
		}
		f.routes["api."+id+".soak.test"] = fp.RoundTripper()
	}
	return f
}

// providerName is the ID of the i-th provider.
func providerName(i int) string {
	if i == 0 {
		return sandbox.DefaultProviderID
	}
	return "p" + strconv.Itoa(i)
}

func (f *fakes) getenv(k string) string { return f.env[k] }

func (f *fakes) RoundTrip(r *http.Request) (*http.Response, error) {
	rt, ok := f.routes[r.URL.Host]
	if !ok {
		rt = f.routes[""]
	}
	resp, err := rt.RoundTrip(r)
	if err == nil && strings.HasPrefix(r.URL.Host, "api.") {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/sandboxes" && resp.StatusCode == http.StatusCreated:
			f.created.Add(1)
		case r.Method == http.MethodDelete && resp.StatusCode == http.StatusNoContent:
			f.destroyed.Add(1)
		}
	}
	return resp, err
}

func (f *fakes) keys() []string {
	var out []string
	for _, fp := range f.list {
		out = append(out, fp.APIKey())
	}
	return out
}

func (f *fakes) live() int {
	n := 0
	for _, fp := range f.list {
		n += fp.LiveCount()
	}
	return n
}

func (f *fakes) resetJournals() {
	for _, fp := range f.list {
		fp.Journal().Reset()
	}
}

func (f *fakes) close() {
	for _, fp := range f.list {
		fp.Close()
	}
}

// heap returns the live heap after two collections (the second empties
// the sync.Pool caches the first one kept).
func heap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// peakRSS reads this process's peak resident set (VmHWM), 0 when unknown.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadavg is the host's 1, 5 and 15 minute load averages.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// settleGoroutines waits (up to d) for the goroutine count to drop to at
// most want, and returns the count.
func settleGoroutines(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveSessions counts the server's live MCP sessions.
func liveSessions(srv *server.Server) int {
	n := 0
	for range srv.MCPServer().Sessions() {
		n++
	}
	return n
}

// run drives the load and returns what it measured. It starts the
// reference server's Streamable HTTP handler on loopback, on an in-process
// fake provider, and tears both down before returning.
func run(ctx context.Context, cfg config, logw io.Writer) (*report, error) {
	if cfg.Sessions < 1 || cfg.MaxCalls < 1 || cfg.Duration <= 0 || cfg.IdleTimeout <= 0 {
		return nil, errors.New("sessions, max calls, duration and idle timeout must be positive")
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	rep := &report{Config: cfg, Ends: map[string]int64{}, ToolErrors: map[string]int64{}, FailKinds: map[string]int64{}}
	rep.GoroutinesStart = runtime.NumGoroutine()

	// The providers, in-process, each with room for every sandbox: the
	// default "e2b" and, with Providers > 1, "p1", "p2", ... each its own
	// fake, so that one fake's lock does not bound the whole load.
	fakes := newFakes(max(cfg.Providers, 1))
	srv, ts, err := startSoakServer(cfg, fakes, logw)
	if err != nil {
		return nil, err
	}
	endpoint := ts.URL + server.MCPPath

	// The clients share one transport, with a connection per session.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Sessions * 2,
		MaxIdleConnsPerHost: cfg.Sessions * 2,
		IdleConnTimeout:     30 * time.Second,
	}
	stopJanitor := startJanitor(fakes)
	rep.GoroutinesBefore = runtime.NumGoroutine()
	rep.HeapBefore = heap()

	driveLoad(ctx, cfg, &http.Client{Transport: tr}, endpoint, rep)
	settle(cfg, srv, fakes, rep)
	rep.PeakLive = stopJanitor()
	tr.CloseIdleConnections()
	fakes.resetJournals()
	rep.GoroutinesIdle = settleGoroutines(rep.GoroutinesBefore, 10*time.Second)
	rep.HeapIdle = heap()
	if cfg.HeapProfile != "" {
		if f, err := os.Create(cfg.HeapProfile); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}

	// Teardown.
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		rep.Failures = append(rep.Failures, "shutdown: "+err.Error())
	}
	ts.Close()
	tr.CloseIdleConnections()
	fakes.close()
	rep.GoroutinesAfter = settleGoroutines(rep.GoroutinesStart, 10*time.Second)
	rep.HeapAfter = heap()
	rep.PeakRSS = peakRSS()
	rep.Failures = append(rep.Failures, verdict(cfg, rep)...)
	return rep, nil
}

// startSoakServer starts the reference server's Streamable HTTP handler on
// loopback, on the fakes, with no session caps.
func startSoakServer(cfg config, fakes *fakes, logw io.Writer) (*server.Server, *httptest.Server, error) {
	platform, err := sandbox.NewPlatform(&sandbox.Options{Getenv: fakes.getenv, Config: fakes.config,
		HTTPClient: &http.Client{Transport: fakes}, UserAgent: "sandboxkit-soak"})
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if cfg.Verbose {
		level = slog.LevelInfo
	}
	srv, err := server.New(&server.Deps{Platform: platform, Secrets: fakes.keys(),
		Limits: server.Limits{DestroyConcurrency: cfg.DestroyConcurrency},
		Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))}, nil)
	if err != nil {
		return nil, nil, err
	}
	hs := srv.HTTPServer(&server.HTTPOptions{SessionTimeout: cfg.IdleTimeout, MaxSessions: -1, MaxSessionsPerClient: -1})
	ts := httptest.NewUnstartedServer(hs.Handler)
	ts.Config.ReadHeaderTimeout, ts.Config.IdleTimeout = hs.ReadHeaderTimeout, hs.IdleTimeout
	ts.Start()
	return srv, ts, nil
}

// startJanitor keeps the fakes' request journals from growing without
// bound and samples their live sandboxes; stop returns the peak.
func startJanitor(fakes *fakes) (stop func() int) {
	var peakLive atomic.Int64
	stopTicking := every(250*time.Millisecond, func() {
		fakes.resetJournals()
		if n := int64(fakes.live()); n > peakLive.Load() {
			peakLive.Store(n)
		}
	})
	return func() int {
		stopTicking()
		return int(peakLive.Load())
	}
}

// every calls fn every interval on a goroutine of its own until stop,
// which returns once fn has run for the last time.
func every(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// driveLoad runs cfg.Sessions workers, each opening sessions one after
// another until cfg.Duration has passed, and adds their counts, CPU and
// latencies to rep.
func driveLoad(ctx context.Context, cfg config, hc *http.Client, endpoint string, rep *report) {
	var (
		mu        sync.Mutex
		latencies []time.Duration
	)
	rep.LoadBefore = loadavg()
	cpu0 := cpuTime()
	deadline := time.Now().Add(cfg.Duration)
	start := time.Now()
	var workers sync.WaitGroup
	for w := range cfg.Sessions {
		workers.Go(func() {
			r := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			st := &workerStats{ends: map[string]int64{}, toolErrors: map[string]int64{}, fails: map[string]int64{}}
			for time.Now().Before(deadline) && ctx.Err() == nil {
				runSession(ctx, cfg, r, &mcpClient{hc: hc, endpoint: endpoint}, st, providerName(w%max(cfg.Providers, 1)))
			}
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, st.latencies...)
			st.addTo(rep)
		})
	}
	workers.Wait()
	rep.Elapsed = time.Since(start)
	rep.CPU = cpuTime() - cpu0
	rep.LoadAfter = loadavg()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	if n := len(latencies); n > 0 {
		rep.P50, rep.P99, rep.Max = latencies[n/2], latencies[min(n-1, n*99/100)], latencies[n-1]
	}
}

// addTo adds one worker's counts to the report.
func (st *workerStats) addTo(rep *report) {
	rep.Sessions += st.sessions
	rep.SessionFails += st.sessionFails
	rep.Calls += st.calls
	rep.CallFails += st.callFails
	for k, v := range st.ends {
		rep.Ends[k] += v
	}
	for k, v := range st.toolErrors {
		rep.ToolErrors[k] += v
	}
	for k, v := range st.fails {
		rep.FailKinds[k] += v
	}
}

// settle waits (up to cfg.Settle) for the server to close every session,
// by DELETE or idle timeout, and destroy what they owned, and records
// what is left.
func settle(cfg config, srv *server.Server, fakes *fakes, rep *report) {
	settleStart := time.Now()
	settleBy := settleStart.Add(cfg.Settle)
	for (liveSessions(srv) > 0 || fakes.live() > 0) && time.Now().Before(settleBy) {
		time.Sleep(50 * time.Millisecond)
	}
	rep.SettleTook = time.Since(settleStart)
	rep.LiveSessionsAfter = liveSessions(srv)
	rep.Leaked = fakes.live()
	rep.Unresolved = len(srv.Unresolved())
	rep.Created, rep.Destroyed = fakes.created.Load(), fakes.destroyed.Load()
}

// verdict returns the run's failures.
func verdict(cfg config, rep *report) []string {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	if rep.Leaked != 0 {
		fail("%d sandboxes leaked", rep.Leaked)
	}
	if rep.Unresolved != 0 {
		fail("%d sandboxes reported not destroyed", rep.Unresolved)
	}
	if rep.LiveSessionsAfter != 0 {
		fail("%d sessions still live after %v", rep.LiveSessionsAfter, cfg.Settle)
	}
	if n := rep.ToolErrors["internal"]; n != 0 {
		fail("%d internal errors", n)
	}
	if rep.Calls == 0 {
		fail("no call was answered")
	}
	if rep.GoroutinesIdle > rep.GoroutinesBefore {
		fail("goroutines of the idle server: %d after the load, %d before", rep.GoroutinesIdle, rep.GoroutinesBefore)
	}
	if rep.GoroutinesAfter > rep.GoroutinesStart {
		fail("goroutines after teardown: %d, %d before", rep.GoroutinesAfter, rep.GoroutinesStart)
	}
	if growth := rep.HeapIdle - rep.HeapBefore; growth > cfg.MaxHeapGrowth {
		fail("live heap of the idle server grew by %d bytes", growth)
	}
	return failures
}

// workerStats are one worker's counts, merged at the end.
type workerStats struct {
	sessions, sessionFails, calls, callFails int64
	ends, toolErrors, fails                  map[string]int64
	latencies                                []time.Duration
}

// runSession opens a session, makes random calls and ends it in a random
// way.
func runSession(ctx context.Context, cfg config, r *rand.Rand, c *mcpClient, st *workerStats, provider string) {
	ictx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	err := c.initialize(ictx)
	cancel()
	if err != nil {
		st.sessionFails++
		st.fails["open: "+failKind(err)]++
		return
	}
	st.sessions++
	s := &sessionState{provider: provider, needCreate: provider != sandbox.DefaultProviderID}
	for range 1 + r.IntN(cfg.MaxCalls) {
		name, args := s.next(r)
		cctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
		t0 := time.Now()
		res, err := c.callTool(cctx, name, args)
		d := time.Since(t0)
		cancel()
		if err != nil {
			st.callFails++
			st.fails["call: "+failKind(err)]++
			continue
		}
		st.calls++
		st.latencies = append(st.latencies, d)
		if res.IsError {
			st.toolErrors[res.category()]++
			continue
		}
		s.observe(name, res)
	}
	end := cfg.EndMix.pick(r)
	st.ends[end]++
	switch end {
	case "delete":
		dctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
		if err := c.delete(dctx); err != nil {
			st.callFails++
			st.fails["delete: "+failKind(err)]++
		}
		cancel()
	case "drop":
		// Start a call and drop the connection while it runs.
		name, args := "run_command", map[string]any{"command": "sleep 0.2; echo late"}
		if r.IntN(2) == 0 {
			name, args = s.next(r)
		}
		dctx, cancel := context.WithTimeout(ctx, time.Duration(r.IntN(50)+1)*time.Millisecond)
		_, _ = c.callTool(dctx, name, args)
		cancel()
	case "idle":
		// Nothing: the server's idle timeout ends the session.
	}
}

// failKind names a failure without its addresses.
func failKind(err error) string {
	var he *httpStatusError
	var re *rpcError
	switch {
	case errors.As(err, &he):
		return fmt.Sprintf("http %d", he.status)
	case errors.As(err, &re):
		return fmt.Sprintf("json-rpc %d", re.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return "client timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "no local port"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "network timeout"
	}
	return fmt.Sprintf("other (%T)", errors.Unwrap(err))
}

// sessionState is what a session's calls learn: background command IDs,
// and whether it has a default sandbox at its provider. A session at a
// provider other than the default creates its sandbox there explicitly
// (an implicit create would go to the default provider).
type sessionState struct {
	provider   string
	needCreate bool
	commands   []string
	n          int
}

func (s *sessionState) observe(name string, res *toolResult) {
	switch name {
	case "start_background_command":
		if id := res.field("command_id"); id != "" {
			s.commands = append(s.commands, id)
		}
	case "create_sandbox":
		s.needCreate = false
	case "kill_sandbox":
		s.needCreate = s.provider != sandbox.DefaultProviderID
	}
}

// callEnv is what a call's arguments are made from.
type callEnv struct {
	s        *sessionState
	r        *rand.Rand
	file     string         // one of four text files, drawn for every call
	provider map[string]any // {"provider": id} at a provider other than the default, else nil
}

// soakCall is one entry of the call mix: the tool called, its weight, and
// its arguments. invalid marks the call that fails validation, which is
// sent even while a session still has to create its sandbox.
type soakCall struct {
	name    string
	weight  int
	invalid bool
	args    func(e callEnv) map[string]any
}

// callMix is the call mix, the one list of the tools the soak calls.
var callMix = []soakCall{
	{name: "run_command", weight: 20, args: func(e callEnv) map[string]any {
		return map[string]any{"command": "echo soak " + strconv.Itoa(e.s.n) + "; ls /tmp > /dev/null"}
	}},
	{name: "write_file", weight: 10, args: func(e callEnv) map[string]any {
		return map[string]any{"path": e.file, "content": strings.Repeat("soak line\n", 1+e.r.IntN(100))}
	}},
	{name: "read_file", weight: 10, args: fileArgs},
	{name: "list_files", weight: 5, args: func(callEnv) map[string]any {
		return map[string]any{"path": ".", "depth": 2}
	}},
	{name: "run_code", weight: 5, args: func(e callEnv) map[string]any {
		return map[string]any{"code": "echo code " + strconv.Itoa(e.s.n), "language": "bash"}
	}},
	{name: "upload_file", weight: 5, args: func(e callEnv) map[string]any {
		data := make([]byte, 256+e.r.IntN(4096))
		for i := range data {
			data[i] = byte(e.r.IntN(256))
		}
		return map[string]any{"path": "soak/bin" + strconv.Itoa(e.r.IntN(2)), "data_base64": base64.StdEncoding.EncodeToString(data)}
	}},
	{name: "download_file", weight: 5, args: fileArgs},
	{name: "create_sandbox", weight: 4, args: func(e callEnv) map[string]any {
		return with(e.provider, "timeout", 600)
	}},
	{name: "get_sandbox", weight: 5, args: noArgs},
	{name: "set_sandbox_timeout", weight: 3, args: func(callEnv) map[string]any {
		return map[string]any{"timeout": 900}
	}},
	{name: "list_sandboxes", weight: 3, args: func(e callEnv) map[string]any {
		return with(e.provider, "limit", 5)
	}},
	{name: "start_background_command", weight: 5, args: func(e callEnv) map[string]any {
		return map[string]any{"command": "sleep 0.1; echo bg " + strconv.Itoa(e.s.n)}
	}},
	{name: "get_background_command", weight: 5, args: commandArgs},
	{name: "kill_background_command", weight: 2, args: commandArgs},
	{name: "kill_sandbox", weight: 2, args: noArgs},
	// A call that fails validation.
	{name: "run_command", weight: 3, invalid: true, args: func(callEnv) map[string]any {
		return map[string]any{"command": 42}
	}},
}

func noArgs(callEnv) map[string]any { return map[string]any{} }

func fileArgs(e callEnv) map[string]any { return map[string]any{"path": e.file} }

// commandArgs names one of the session's background commands, or an
// unknown one before it has started any.
func commandArgs(e callEnv) map[string]any {
	id := "bg-0000000000000000"
	if len(e.s.commands) > 0 {
		id = e.s.commands[e.r.IntN(len(e.s.commands))]
	}
	return map[string]any{"command_id": id}
}

var totalWeight = func() int {
	n := 0
	for _, c := range callMix {
		n += c.weight
	}
	return n
}()

// next picks a call.
func (s *sessionState) next(r *rand.Rand) (string, map[string]any) {
	n := r.IntN(totalWeight)
	c := callMix[0]
	for _, t := range callMix {
		if n < t.weight {
			c = t
			break
		}
		n -= t.weight
	}
	s.n++
	e := callEnv{s: s, r: r, file: "soak/f" + strconv.Itoa(r.IntN(4)) + ".txt"}
	if s.needCreate && !c.invalid {
		c = mixCall("create_sandbox")
	}
	if s.provider != sandbox.DefaultProviderID {
		e.provider = map[string]any{"provider": s.provider}
	}
	return c.name, c.args(e)
}

// mixCall returns the valid entry of callMix for a tool.
func mixCall(name string) soakCall {
	for _, c := range callMix {
		if c.name == name && !c.invalid {
			return c
		}
	}
	panic("sandboxkit-soak: no call " + name + " in the mix")
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for mk, mv := range m {
		out[mk] = mv
	}
	return out
}

// print writes the report.
func (rep *report) print(w io.Writer) {
	c := rep.Config
	fmt.Fprintf(w, "sandboxkit-soak: sessions=%d duration=%v seed=%d end-mix=%s max-calls=%d idle-timeout=%v providers=%d\n",
		c.Sessions, c.Duration, c.Seed, c.EndMix, c.MaxCalls, c.IdleTimeout, max(c.Providers, 1))
	secs := rep.Elapsed.Seconds()
	fmt.Fprintf(w, "sessions:   %d opened (%d failed to open); ended: delete %d, idle %d, drop %d\n",
		rep.Sessions, rep.SessionFails, rep.Ends["delete"], rep.Ends["idle"], rep.Ends["drop"])
	fmt.Fprintf(w, "calls:      %d answered in %.1fs = %.0f calls/s; %d without an answer\n", rep.Calls, secs, float64(rep.Calls)/secs, rep.CallFails)
	fmt.Fprintf(w, "cpu:        %.1fs used = %.2f cores on %d; host load %s before, %s after\n", rep.CPU.Seconds(), rep.CPU.Seconds()/secs, runtime.NumCPU(), rep.LoadBefore, rep.LoadAfter)
	if len(rep.FailKinds) > 0 {
		var kinds []string
		for k, v := range rep.FailKinds {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "no answer:  %s\n", strings.Join(kinds, ", "))
	}
	fmt.Fprintf(w, "latency:    p50 %v, p99 %v, max %v\n", rep.P50.Round(time.Microsecond), rep.P99.Round(time.Microsecond), rep.Max.Round(time.Microsecond))
	var cats []string
	for k, v := range rep.ToolErrors {
		cats = append(cats, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(cats)
	fmt.Fprintf(w, "tool errors: %s\n", strings.Join(cats, ", "))
	fmt.Fprintf(w, "sandboxes:  %d created, %d destroyed, peak %d live, %d leaked, %d reported not destroyed\n",
		rep.Created, rep.Destroyed, rep.PeakLive, rep.Leaked, rep.Unresolved)
	fmt.Fprintf(w, "settle:     %v until every session closed and every sandbox destroyed (%d sessions still live)\n", rep.SettleTook.Round(time.Millisecond), rep.LiveSessionsAfter)
	fmt.Fprintf(w, "goroutines: idle server %d before, %d after the load; process %d before, %d after teardown\n",
		rep.GoroutinesBefore, rep.GoroutinesIdle, rep.GoroutinesStart, rep.GoroutinesAfter)
	fmt.Fprintf(w, "heap:       idle server %.1f MiB before, %.1f MiB after the load; %.1f MiB after teardown\n",
		mib(rep.HeapBefore), mib(rep.HeapIdle), mib(rep.HeapAfter))
	fmt.Fprintf(w, "peak RSS:   %.1f MiB (VmHWM)\n", mib(rep.PeakRSS))
	if len(rep.Failures) == 0 {
		fmt.Fprintln(w, "result:     PASS")
		return
	}
	fmt.Fprintf(w, "result:     FAIL: %s\n", strings.Join(rep.Failures, "; "))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
