package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// hostileConfig is the -hostile mix: what one attacking client
// (127.0.0.1) sends, in phases, while a second client (127.0.0.2) keeps
// calling; a third (127.0.0.3) makes the concurrent uploads and a fourth
// (127.0.0.4) the malformed messages.
type hostileConfig struct {
	// Target is the /mcp URL of a server already running ("": one is
	// started in this process on the default options, on an in-process
	// fake provider); PID is its process, whose RSS is measured (0: this
	// process).
	Target string
	PID    int
	// Pings oversized pings of PingBytes, each on its own session.
	Pings, PingBytes int
	// Flood session opens, FloodConcurrency at a time.
	Flood, FloodConcurrency int
	// Slow connections that trickle a body for SlowFor.
	Slow    int
	SlowFor time.Duration
	// Uploads concurrent upload_file calls of UploadBytes (decoded).
	Uploads, UploadBytes int
}

// hostileReport is what -hostile prints.
type hostileReport struct {
	BaselineRSS int64
	// Per phase: the server's RSS at its end, and its peak during it,
	// both as growth over the baseline.
	Phases []phaseFigure
	// Statuses are the answers per phase ("200", "413", "conn" ...).
	Statuses map[string]map[string]int
	// VictimCalls and VictimFails are the other client's calls.
	VictimCalls, VictimFails int64
	// VictimNewSession is whether the other client could open a session
	// after the flood.
	VictimNewSession bool
	// Leaked sandboxes after every session ended (-1: not known).
	Leaked   int
	Failures []string
}

type phaseFigure struct {
	Name           string
	EndRSS, Peak   int64
	Took           time.Duration
	RefusedByOther int
}

// rssOf returns the resident set size of pid (bytes), from /proc.
func rssOf(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// clientFrom returns an HTTP client whose connections come from the
// loopback address local, so that the server tells the clients apart.
func clientFrom(local string) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}, Timeout: 2 * time.Minute}
}

// statusOf names the outcome of a request for the report.
func statusOf(err error) string {
	var he *httpStatusError
	var re *rpcError
	switch {
	case err == nil:
		return "200"
	case errors.As(err, &he):
		return strconv.Itoa(he.status)
	case errors.As(err, &re):
		return "rpc" + strconv.Itoa(re.Code)
	}
	return "conn"
}

// hostileRun is one -hostile run in progress: the server it measures, its
// four clients, and the report it fills phase by phase.
type hostileRun struct {
	cfg      hostileConfig
	endpoint string
	pid      int
	rep      *hostileReport

	attacker, victimHC, uploader, prober *http.Client

	mu sync.Mutex
	// sessions are every session the run opened, each deleted at the end.
	sessions []*mcpClient
}

// runHostile runs the -hostile mix and reports.
func runHostile(ctx context.Context, cfg hostileConfig, logw io.Writer) (*hostileReport, error) {
	r := &hostileRun{cfg: cfg, endpoint: cfg.Target, pid: cfg.PID, rep: &hostileReport{Statuses: map[string]map[string]int{}, Leaked: -1}}
	if r.endpoint == "" {
		stop, url, err := startLocalServer(logw)
		if err != nil {
			return nil, err
		}
		defer stop()
		r.endpoint, r.pid = url, os.Getpid()
	}
	if r.pid == 0 {
		r.pid = os.Getpid()
	}
	r.attacker, r.victimHC, r.uploader, r.prober = clientFrom("127.0.0.1"), clientFrom("127.0.0.2"), clientFrom("127.0.0.3"), clientFrom("127.0.0.4")
	defer func() {
		for _, c := range []*http.Client{r.attacker, r.victimHC, r.uploader, r.prober} {
			c.CloseIdleConnections()
		}
	}()
	r.rep.BaselineRSS = rssOf(r.pid)

	victim := &mcpClient{hc: r.victimHC, endpoint: r.endpoint}
	if err := victim.initialize(ctx); err != nil {
		return nil, fmt.Errorf("the other client's session: %w", err)
	}
	r.keep(victim)
	stopVictim := r.callThroughout(ctx, victim)

	r.phase("pings", func(count func(string)) { r.pings(ctx, count) })
	r.phase("flood", func(count func(string)) { r.flood(ctx, count) })
	r.phase("slow", func(count func(string)) { r.slow(ctx, count) })
	r.phase("malformed", func(count func(string)) { r.malformed(ctx, count) })
	r.phase("uploads", func(count func(string)) { r.uploads(ctx, count) })
	stopVictim()
	r.finish(ctx)
	return r.rep, nil
}

// keep records a session the run opened, to delete at the end.
func (r *hostileRun) keep(c *mcpClient) {
	r.mu.Lock()
	r.sessions = append(r.sessions, c)
	r.mu.Unlock()
}

// callThroughout keeps the other client calling on its established session
// until the returned stop, which records its calls and failures.
func (r *hostileRun) callThroughout(ctx context.Context, victim *mcpClient) (stop func()) {
	vctx, vstop := context.WithCancel(ctx)
	var vwg sync.WaitGroup
	var vcalls, vfails atomic.Int64
	vwg.Go(func() {
		for vctx.Err() == nil {
			cctx, cancel := context.WithTimeout(vctx, 30*time.Second)
			_, err := victim.callTool(cctx, "list_sandboxes", map[string]any{})
			cancel()
			if vctx.Err() != nil {
				return
			}
			vcalls.Add(1)
			if err != nil {
				vfails.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return func() {
		vstop()
		vwg.Wait()
		r.rep.VictimCalls, r.rep.VictimFails = vcalls.Load(), vfails.Load()
	}
}

// phase runs one phase of the mix, counting its answers and sampling the
// server's RSS while it runs.
func (r *hostileRun) phase(name string, body func(count func(string))) {
	counts := map[string]int{}
	var cmu sync.Mutex
	count := func(s string) { cmu.Lock(); counts[s]++; cmu.Unlock() }
	var peak atomic.Int64
	peak.Store(rssOf(r.pid))
	stopSampling := every(20*time.Millisecond, func() {
		if rss := rssOf(r.pid); rss > peak.Load() {
			peak.Store(rss)
		}
	})
	start := time.Now()
	body(count)
	took := time.Since(start)
	stopSampling()
	r.rep.Statuses[name] = counts
	r.rep.Phases = append(r.rep.Phases, phaseFigure{Name: name, EndRSS: rssOf(r.pid) - r.rep.BaselineRSS, Peak: peak.Load() - r.rep.BaselineRSS, Took: took})
}

// pings sends oversized pings, each from a session that then stays idle.
func (r *hostileRun) pings(ctx context.Context, count func(string)) {
	ping := []byte(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("a", r.cfg.PingBytes) + `"}}}`)
	for range r.cfg.Pings {
		c := &mcpClient{hc: r.attacker, endpoint: r.endpoint}
		if err := c.initialize(ctx); err != nil {
			count("init-" + statusOf(err))
			continue
		}
		r.keep(c)
		count(postStatus(ctx, c, ping))
	}
}

// postStatus posts one raw body on a session and names its answer.
func postStatus(ctx context.Context, c *mcpClient, body []byte) string {
	resp, err := c.post(ctx, body)
	if err != nil {
		return "conn"
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// flood opens sessions as fast as the flood's concurrency allows, then
// checks the other client can still open one.
func (r *hostileRun) flood(ctx context.Context, count func(string)) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range max(r.cfg.FloodConcurrency, 1) {
		wg.Go(func() {
			for next.Add(1) <= int64(r.cfg.Flood) {
				c := &mcpClient{hc: r.attacker, endpoint: r.endpoint}
				err := c.initialize(ctx)
				count(statusOf(err))
				if err == nil {
					r.keep(c)
				}
			}
		})
	}
	wg.Wait()
	nv := &mcpClient{hc: r.victimHC, endpoint: r.endpoint}
	if err := nv.initialize(ctx); err == nil {
		r.rep.VictimNewSession = true
		_ = nv.delete(ctx)
	}
}

// slow opens connections whose headers promise a body that trickles in.
func (r *hostileRun) slow(ctx context.Context, count func(string)) {
	var wg sync.WaitGroup
	for range r.cfg.Slow {
		wg.Go(func() { count(slowBody(ctx, r.endpoint, r.cfg.SlowFor)) })
	}
	wg.Wait()
}

// malformed sends malformed bodies on an established session of a fourth
// client (the attacker's own slots are full by now), which must stay
// usable.
func (r *hostileRun) malformed(ctx context.Context, count func(string)) {
	c := &mcpClient{hc: r.prober, endpoint: r.endpoint}
	if err := c.initialize(ctx); err != nil {
		count("init-" + statusOf(err))
		return
	}
	defer func() { _ = c.delete(ctx) }()
	for _, b := range malformedBodies {
		count(postStatus(ctx, c, []byte(b)))
	}
	if _, err := c.call(ctx, "ping", map[string]any{}); err != nil {
		r.rep.Failures = append(r.rep.Failures, "the session was unusable after the malformed messages")
	}
}

// uploads makes concurrent large uploads from a third client.
func (r *hostileRun) uploads(ctx context.Context, count func(string)) {
	data := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, r.cfg.UploadBytes))
	var wg sync.WaitGroup
	for i := range r.cfg.Uploads {
		wg.Go(func() {
			c := &mcpClient{hc: r.uploader, endpoint: r.endpoint}
			if err := c.initialize(ctx); err != nil {
				count("init-" + statusOf(err))
				return
			}
			r.keep(c)
			res, err := c.callTool(ctx, "upload_file", map[string]any{"path": "/tmp/up" + strconv.Itoa(i), "data_base64": data})
			switch {
			case err != nil:
				count(statusOf(err))
			case res.IsError:
				count("tool-" + res.category())
			default:
				count("200")
			}
		})
	}
	wg.Wait()
}

// finish ends every session, counts what is left, and records the
// failures the run saw.
func (r *hostileRun) finish(ctx context.Context) {
	for _, c := range r.sessions {
		_ = c.delete(ctx)
	}
	rep := r.rep
	rep.Leaked = leftSandboxes(ctx, r.victimHC, r.endpoint)
	if rep.VictimFails > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("the other client's calls failed %d times", rep.VictimFails))
	}
	if !rep.VictimNewSession {
		rep.Failures = append(rep.Failures, "the other client could not open a session after the flood")
	}
	if rep.Leaked > 0 {
		rep.Failures = append(rep.Failures, fmt.Sprintf("%d sandboxes leaked", rep.Leaked))
	}
}

// leftSandboxes waits up to 30 s for the provider to hold no sandbox, as
// seen by list_sandboxes from a fresh session; it returns how many are left
// (-1 when it cannot tell).
func leftSandboxes(ctx context.Context, hc *http.Client, endpoint string) int {
	c := &mcpClient{hc: hc, endpoint: endpoint}
	if err := c.initialize(ctx); err != nil {
		return -1
	}
	defer func() { _ = c.delete(ctx) }()
	n := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		res, err := c.callTool(ctx, "list_sandboxes", map[string]any{})
		if err != nil || res.IsError {
			return -1
		}
		var out struct {
			Sandboxes []json.RawMessage `json:"sandboxes"`
		}
		_ = json.Unmarshal(res.StructuredContent, &out)
		if n = len(out.Sandboxes); n == 0 {
			return 0
		}
	}
	return n
}

// malformedBodies are sent on an established session; each must be
// refused with a 4xx and leave the session usable.
var malformedBodies = []string{
	"garbage", "[]", "null", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":2,"method":"ping"}{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_sandboxes","name":"kill_sandbox","arguments":{}}}`,
}

// slowBody opens a session-less POST whose body trickles in a byte every
// 100 ms for d, then gives up; it returns how the server answered.
func slowBody(ctx context.Context, endpoint string, d time.Duration) string {
	u := strings.TrimPrefix(endpoint, "http://")
	host, path, _ := strings.Cut(u, "/")
	conn, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}).DialContext(ctx, "tcp", host)
	if err != nil {
		return "dial"
	}
	defer conn.Close()
	_, _ = fmt.Fprintf(conn, "POST /%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1048576\r\n\r\n{", path, host)
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, err := conn.Write([]byte(" ")); err != nil {
			return "cut"
		}
	}
	return "gave-up"
}

// startLocalServer serves the reference server on 127.0.0.1 with the
// default HTTP options, on an in-process fake provider.
func startLocalServer(logw io.Writer) (stop func(), endpoint string, err error) {
	fp := fakeprovider.New(nil)
	platform, err := sandbox.NewPlatform(&sandbox.Options{Getenv: func(k string) string {
		if k == sandbox.EnvAPIKey {
			return fp.APIKey()
		}
		return ""
	}, HTTPClient: fp.HTTPClient(), UserAgent: "sandboxkit-soak"})
	if err != nil {
		return nil, "", err
	}
	srv, err := server.New(&server.Deps{Platform: platform, Secrets: []string{fp.APIKey()},
		Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn}))}, nil)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	hs := srv.HTTPServer(nil)
	go func() { _ = hs.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = hs.Shutdown(ctx)
		fp.Close()
	}, "http://" + ln.Addr().String() + server.MCPPath, nil
}

// print writes the report.
func (rep *hostileReport) print(w io.Writer) {
	fmt.Fprintf(w, "hostile mix: server RSS baseline %.0f MiB\n", mib(rep.BaselineRSS))
	for _, p := range rep.Phases {
		fmt.Fprintf(w, "  %-9s took %6.1fs  RSS growth at end %+7.0f MiB, peak %+7.0f MiB  answers %v\n",
			p.Name, p.Took.Seconds(), mib(p.EndRSS), mib(p.Peak), rep.Statuses[p.Name])
	}
	fmt.Fprintf(w, "  other client: %d calls, %d failed; new session after the flood: %v\n", rep.VictimCalls, rep.VictimFails, rep.VictimNewSession)
	fmt.Fprintf(w, "  sessions refused per client: attacker %d (429) + %d (503)\n", refusedBy(rep, "429"), refusedBy(rep, "503"))
	fmt.Fprintf(w, "  sandboxes leaked: %d\n", rep.Leaked)
	for _, f := range rep.Failures {
		fmt.Fprintln(w, "FAIL:", f)
	}
}

// refusedBy sums one status over the session-opening phases.
func refusedBy(rep *hostileReport, status string) int {
	return rep.Statuses["flood"][status] + rep.Statuses["pings"]["init-"+status]
}
