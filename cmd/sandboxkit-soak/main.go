// Command sandboxkit-soak puts the reference MCP server under load: it
// serves the server's Streamable HTTP handler on loopback, on an
// in-process fake provider, and drives many concurrent sessions that make
// random tool calls and end in random ways (HTTP DELETE, idle timeout, a
// connection dropped in the middle of a call) for a bounded time. At the
// end every session must have closed and every sandbox the server created
// must be destroyed; it prints calls/s, p50/p99 latency, peak RSS,
// goroutines and heap before and after, and exits with status 1 when a
// sandbox leaked or the server did not return to its idle state.
//
//	go run ./cmd/sandboxkit-soak -sessions 200 -duration 30s
//	go run ./cmd/sandboxkit-soak -sessions 1000 -duration 60s -end-mix delete=40,idle=30,drop=30 -seed 7
//
// With -hostile it runs the hostile mix instead: one client (127.0.0.1)
// sends oversized pings from idle sessions, floods sessions, trickles
// bodies and sends malformed messages, and a third (127.0.0.3) makes
// concurrent large uploads, while another client (127.0.0.2) keeps
// calling. It prints the server's RSS growth per phase, the answers per
// phase (so the sessions refused per client), whether the other client's
// calls all succeeded, and the sandboxes left; -target and -pid aim it at
// a server already running (sandboxkit serve --fake --http ...):
//
//	go run ./cmd/sandboxkit-soak -hostile
//	go run ./cmd/sandboxkit-soak -hostile -target http://127.0.0.1:8080/mcp -pid "$(pgrep -n sandboxkit)"
//
// With -lockout it runs the lockout repro against a running server: 16
// addresses (X-Forwarded-For) each open 64 sessions and ping each every
// 5 s, so none is idle, then a 17th address tries 12 times, 6 s apart, to
// open a session and make a call; it prints what the newcomer got and how
// many busy sessions were evicted:
//
//	sandboxkit serve --fake --http 127.0.0.1:18428 --client-ip-header X-Forwarded-For &
//	go run ./cmd/sandboxkit-soak -lockout -target http://127.0.0.1:18428/mcp
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/sandboxkit/sandboxkit/server"
)

func main() {
	os.Exit(mainWithArgs(os.Args[1:], os.Stdout, os.Stderr))
}

func mainWithArgs(args []string, stdout, stderr io.Writer) int {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("sandboxkit-soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mix := fs.String("end-mix", cfg.EndMix.String(), "weights of the ways sessions end: delete (HTTP DELETE), idle (server idle timeout), drop (connection dropped mid-call, then idle)")
	fs.IntVar(&cfg.Sessions, "sessions", cfg.Sessions, "concurrent sessions; each worker opens a new one when its last ends")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long new sessions are opened")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "random seed of the call and end mix (0: from the clock; printed)")
	fs.IntVar(&cfg.MaxCalls, "max-calls", cfg.MaxCalls, "tool calls per session: a random number from 1 to this")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "the server's session idle timeout, which ends idle and dropped sessions")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "how long to wait after the load for every session to close and every sandbox to be destroyed")
	fs.DurationVar(&cfg.CallTimeout, "call-timeout", cfg.CallTimeout, "client-side bound of one call")
	fs.Int64Var(&cfg.MaxHeapGrowth, "max-heap-growth", cfg.MaxHeapGrowth, "live heap growth of the idle server (bytes) tolerated after the load")
	fs.BoolVar(&cfg.Verbose, "v", false, "log the server's info lines too (default: warnings and errors)")
	fs.IntVar(&cfg.DestroyConcurrency, "destroy-concurrency", 0, "the server's limit on concurrent close-time destroys (0: its default, "+strconv.Itoa(server.DefaultDestroyConcurrency)+")")
	fs.IntVar(&cfg.Providers, "providers", 1, "fake providers the sessions spread over (one in-process fake each; 1: the default provider only)")
	fs.StringVar(&cfg.HeapProfile, "heapprofile", "", "write a heap profile of the idle server after the load to this file")
	hostile := fs.Bool("hostile", false, "run the hostile mix (see the package doc) instead of the soak")
	hc := hostileConfig{Pings: 100, PingBytes: 22 << 20, Flood: 1200, FloodConcurrency: 8, Slow: 20, SlowFor: 3 * time.Second, Uploads: 20, UploadBytes: 16 << 20}
	fs.StringVar(&hc.Target, "target", "", "-hostile, -lockout: the /mcp URL of a running server (default: one in this process)")
	fs.IntVar(&hc.PID, "pid", 0, "-hostile: the process ID of the -target server, whose RSS is measured")
	fs.IntVar(&hc.Pings, "pings", hc.Pings, "-hostile: oversized pings, each from its own session")
	fs.IntVar(&hc.PingBytes, "ping-bytes", hc.PingBytes, "-hostile: padding of each oversized ping")
	fs.IntVar(&hc.Flood, "flood", hc.Flood, "-hostile: session opens of the flood")
	fs.IntVar(&hc.Slow, "slow", hc.Slow, "-hostile: connections that trickle their body")
	fs.IntVar(&hc.Uploads, "uploads", hc.Uploads, "-hostile: concurrent upload_file calls")
	fs.IntVar(&hc.UploadBytes, "upload-bytes", hc.UploadBytes, "-hostile: decoded size of each upload")
	lockout := fs.Bool("lockout", false, "run the lockout repro: -lockout-clients addresses (X-Forwarded-For) each hold -lockout-sessions busy sessions of -target, then a newcomer tries to get one")
	lc := lockoutConfig{Clients: 16, Sessions: 64, PingEvery: 5 * time.Second, Tries: 12, TryEvery: 6 * time.Second}
	fs.IntVar(&lc.Clients, "lockout-clients", lc.Clients, "-lockout: holder addresses")
	fs.IntVar(&lc.Sessions, "lockout-sessions", lc.Sessions, "-lockout: sessions each holder address opens and keeps busy")
	fs.DurationVar(&lc.PingEvery, "lockout-ping-every", lc.PingEvery, "-lockout: ping interval of every holder session (keep it below the target's --evict-idle)")
	fs.IntVar(&lc.Tries, "lockout-tries", lc.Tries, "-lockout: the newcomer's tries")
	fs.DurationVar(&lc.TryEvery, "lockout-try-every", lc.TryEvery, "-lockout: time between the newcomer's tries")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	mutexProfile := fs.String("mutexprofile", "", "write a mutex contention profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "sandboxkit-soak:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "sandboxkit-soak:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.HeapProfile != "" {
		runtime.MemProfileRate = 4096
	}
	if *mutexProfile != "" {
		runtime.SetMutexProfileFraction(5)
		defer func() {
			if f, err := os.Create(*mutexProfile); err == nil {
				_ = pprof.Lookup("mutex").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	var err error
	if cfg.EndMix, err = parseEndMix(*mix); err != nil {
		fmt.Fprintln(stderr, "sandboxkit-soak:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep outcome
	switch {
	case *lockout:
		lc.Target = hc.Target
		rep, err = runLockout(ctx, lc, stderr)
	case *hostile:
		rep, err = runHostile(ctx, hc, stderr)
	default:
		rep, err = run(ctx, cfg, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sandboxkit-soak:", err)
		return 2
	}
	rep.print(stdout)
	if rep.failed() {
		return 1
	}
	return 0
}

// outcome is what a soak run or a hostile mix reports.
type outcome interface {
	print(w io.Writer)
	// failed reports whether the run found a failure.
	failed() bool
}

func (r *report) failed() bool        { return len(r.Failures) > 0 }
func (r *hostileReport) failed() bool { return len(r.Failures) > 0 }
