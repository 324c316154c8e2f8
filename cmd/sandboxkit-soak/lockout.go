package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// lockoutConfig is the -lockout run: Clients addresses (faked with
// X-Forwarded-For, so the target must run with --client-ip-header
// X-Forwarded-For) each open Sessions sessions and keep every one busy with
// a ping every PingEvery, so that none is idle for --evict-idle; then a
// newcomer address tries Tries times, TryEvery apart, to open a session and
// make one call on it.
type lockoutConfig struct {
	Target    string
	Clients   int
	Sessions  int
	PingEvery time.Duration
	Tries     int
	TryEvery  time.Duration
}

// lockoutReport is what a -lockout run saw.
type lockoutReport struct {
	Opened        int            // holder sessions opened
	Refused       map[string]int // holder opens refused, by status
	Evicted       atomic.Int64   // holder sessions whose ping found them gone
	EvictedBefore int64          // of those, found before the newcomer's first try
	Tries         []string       // the newcomer's outcome per try
	Latency       []time.Duration
	Failures      []string
}

// forwardedFor sets X-Forwarded-For on every request, as a trusted proxy
// in front of the server would for a client at addr.
type forwardedFor struct {
	addr string
	next http.RoundTripper
}

func (f forwardedFor) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Forwarded-For", f.addr)
	return f.next.RoundTrip(req)
}

// clientAt is an HTTP client whose requests come from addr for a server
// that trusts X-Forwarded-For.
func clientAt(addr string) *http.Client {
	return &http.Client{Transport: forwardedFor{addr, &http.Transport{MaxIdleConnsPerHost: 64}}, Timeout: time.Minute}
}

// runLockout fills the target with busy holder sessions, then measures
// the newcomer.
func runLockout(ctx context.Context, cfg lockoutConfig, logw io.Writer) (*lockoutReport, error) {
	if cfg.Target == "" {
		return nil, fmt.Errorf("-lockout needs -target (a sandboxkit serve --fake --http ... --client-ip-header X-Forwarded-For)")
	}
	rep := &lockoutReport{Refused: map[string]int{}}
	hctx, stopHolders := context.WithCancel(ctx)
	defer stopHolders()
	var mu sync.Mutex
	var holders sync.WaitGroup
	opens := make(chan struct{}, 32) // opens at once
	for c := 0; c < cfg.Clients; c++ {
		hc := clientAt(fmt.Sprintf("10.28.0.%d", c+1))
		for s := 0; s < cfg.Sessions; s++ {
			holders.Add(1)
			go func() {
				defer holders.Done()
				opens <- struct{}{}
				cl := &mcpClient{hc: hc, endpoint: cfg.Target}
				err := cl.initialize(hctx)
				<-opens
				mu.Lock()
				if err != nil {
					rep.Refused[statusOf(err)]++
				} else {
					rep.Opened++
				}
				mu.Unlock()
				if err == nil {
					keepBusy(hctx, cl, cfg.PingEvery, rep)
				}
			}()
		}
	}
	waitOpened(ctx, &mu, rep, cfg.Clients*cfg.Sessions)
	sleepCtx(ctx, cfg.PingEvery+time.Second) // every holder pinged once more: evictions among them are seen
	rep.EvictedBefore = rep.Evicted.Load()
	fmt.Fprintf(logw, "holders: %d opened, refused %v, %d evicted while opening\n", rep.Opened, rep.Refused, rep.EvictedBefore)
	newcomer := clientAt("10.28.1.1")
	for i := 0; i < cfg.Tries && ctx.Err() == nil; i++ {
		if i > 0 {
			sleepCtx(ctx, cfg.TryEvery)
		}
		start := time.Now()
		outcome := tryNewcomer(ctx, newcomer, cfg.Target)
		rep.Tries = append(rep.Tries, outcome)
		rep.Latency = append(rep.Latency, time.Since(start))
		fmt.Fprintf(logw, "newcomer try %d: %s in %s\n", i+1, outcome, time.Since(start).Round(time.Millisecond))
	}
	stopHolders()
	holders.Wait()
	return rep, nil
}

// waitOpened returns once every holder open has an answer.
func waitOpened(ctx context.Context, mu *sync.Mutex, rep *lockoutReport, want int) {
	for ctx.Err() == nil {
		mu.Lock()
		n := rep.Opened
		for _, r := range rep.Refused {
			n += r
		}
		mu.Unlock()
		if n >= want {
			return
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// keepBusy pings cl every d until ctx ends or the session is gone.
func keepBusy(ctx context.Context, cl *mcpClient, d time.Duration, rep *lockoutReport) {
	for ctx.Err() == nil {
		sleepCtx(ctx, d)
		if ctx.Err() != nil {
			break
		}
		if _, err := cl.call(ctx, "ping", map[string]any{}); err != nil && ctx.Err() == nil {
			rep.Evicted.Add(1)
			return
		}
	}
	dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = cl.delete(dctx)
}

// tryNewcomer opens a session, makes one call (list_sandboxes), and ends
// the session: "ok", or the status that refused it.
func tryNewcomer(ctx context.Context, hc *http.Client, endpoint string) string {
	cl := &mcpClient{hc: hc, endpoint: endpoint}
	if err := cl.initialize(ctx); err != nil {
		return "open " + statusOf(err)
	}
	defer func() { _ = cl.delete(context.WithoutCancel(ctx)) }()
	if _, err := cl.callTool(ctx, "list_sandboxes", map[string]any{}); err != nil {
		return "call " + statusOf(err)
	}
	return "ok"
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (rep *lockoutReport) failed() bool { return len(rep.Failures) > 0 }

func (rep *lockoutReport) print(w io.Writer) {
	ok := 0
	for _, o := range rep.Tries {
		if o == "ok" {
			ok++
		}
	}
	lat := append([]time.Duration(nil), rep.Latency...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var max time.Duration
	if len(lat) > 0 {
		max = lat[len(lat)-1]
	}
	fmt.Fprintf(w, "holders opened: %d (refused: %v)\n", rep.Opened, rep.Refused)
	fmt.Fprintf(w, "busy holder sessions evicted (seen by a failed ping): %d while the holders opened, %d more during the newcomer's tries\n",
		rep.EvictedBefore, rep.Evicted.Load()-rep.EvictedBefore)
	fmt.Fprintf(w, "newcomer: %d of %d tries got a session and a call answered (slowest %s): %s\n",
		ok, len(rep.Tries), max.Round(time.Millisecond), strings.Join(rep.Tries, ", "))
}
