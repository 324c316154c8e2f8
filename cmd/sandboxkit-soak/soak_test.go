package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSoakSmoke is a short soak: 20 sessions for 2 s, every way of ending
// a session, and the verdict: no sandbox leaked, every session closed,
// the idle server back to its goroutines and heap. The figures are logged,
// not asserted.
func TestSoakSmoke(t *testing.T) {
	cfg := defaultConfig()
	cfg.Sessions, cfg.Duration, cfg.IdleTimeout, cfg.Settle, cfg.Seed = 20, 2*time.Second, 500*time.Millisecond, time.Minute, 1
	cfg.EndMix = endMix{"delete": 1, "idle": 1, "drop": 1}
	var logs bytes.Buffer
	rep, err := run(context.Background(), cfg, &logs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.print(&out)
	t.Log("\n" + out.String())
	if len(rep.Failures) > 0 {
		t.Errorf("soak failed: %v\nserver log:\n%s", rep.Failures, logs.String())
	}
	for _, end := range []string{"delete", "idle", "drop"} {
		if rep.Ends[end] == 0 {
			t.Errorf("no session ended by %s", end)
		}
	}
	if rep.Created == 0 || rep.Created != rep.Destroyed {
		t.Errorf("%d sandboxes created, %d destroyed", rep.Created, rep.Destroyed)
	}
}

// TestHostileSmoke is a small -hostile mix against an in-process server on
// the default options: oversized pings are refused (413), the flood hits
// the per-client cap (429), slow bodies and malformed messages do no harm,
// uploads go through, the other client's calls all succeed and nothing is
// left.
func TestHostileSmoke(t *testing.T) {
	cfg := hostileConfig{Pings: 5, PingBytes: 512 << 10, Flood: 80, FloodConcurrency: 4, Slow: 3, SlowFor: 500 * time.Millisecond,
		Uploads: 3, UploadBytes: 1 << 20}
	var logs bytes.Buffer
	rep, err := runHostile(context.Background(), cfg, &logs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.print(&out)
	t.Log("\n" + out.String())
	if len(rep.Failures) > 0 {
		t.Errorf("hostile mix failed: %v\nserver log:\n%s", rep.Failures, logs.String())
	}
	if rep.Statuses["pings"]["413"] != cfg.Pings {
		t.Errorf("pings answered %v, want %d × 413", rep.Statuses["pings"], cfg.Pings)
	}
	if rep.Statuses["flood"]["429"] == 0 {
		t.Errorf("the flood was never refused: %v", rep.Statuses["flood"])
	}
	if rep.Statuses["uploads"]["200"] != cfg.Uploads {
		t.Errorf("uploads answered %v", rep.Statuses["uploads"])
	}
	if got := rep.Statuses["malformed"]; got["400"] != len(malformedBodies) {
		t.Errorf("malformed messages answered %v, want %d × 400", got, len(malformedBodies))
	}
	if rep.VictimCalls == 0 || rep.Leaked != 0 {
		t.Errorf("other client %d calls; %d sandboxes left", rep.VictimCalls, rep.Leaked)
	}
}

func TestFlags(t *testing.T) {
	var out, errw bytes.Buffer
	if code := mainWithArgs([]string{"-end-mix", "delete=1,bogus=2"}, &out, &errw); code != 2 || !strings.Contains(errw.String(), "end mix") {
		t.Errorf("bad end mix: %d %s", code, errw.String())
	}
	if code := mainWithArgs([]string{"-sessions", "0"}, &out, &errw); code != 2 {
		t.Errorf("zero sessions: %d", code)
	}
}
