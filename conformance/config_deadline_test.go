package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// The kit knows the server's provider deadline when it is given, or when
// it starts the reference server itself; it refuses deadlines it cannot
// test and a call timeout that leaves no room for a late answer.
func TestConfigProviderDeadline(t *testing.T) {
	stdio := func(c *Config) { c.ServerCommand = []string{"./srv"} }
	realSandboxes := func(c *Config) {
		c.FakeDaemon = func(fakeprovider.DaemonConfig) fakeprovider.Daemon { return nil }
	}
	cases := []struct {
		name  string
		edit  func(*Config)
		want  time.Duration
		known bool
		err   string
	}{
		{"in-process default", func(*Config) {}, DefaultInProcessDeadline, true, ""},
		{"in-process given", func(c *Config) { c.ProviderDeadline = 2 * time.Second }, 2 * time.Second, true, ""},
		{"in-process real sandboxes", realSandboxes, DefaultInProcessRealSandboxDeadline, true, ""},
		{"in-process real sandboxes given", func(c *Config) { realSandboxes(c); c.ProviderDeadline = 3 * time.Second }, 3 * time.Second, true, ""},
		{"stdio real sandboxes unknown", func(c *Config) { stdio(c); realSandboxes(c) }, 0, false, ""},
		{"stdio unknown", stdio, 0, false, ""},
		{"stdio given", func(c *Config) { stdio(c); c.ProviderDeadline = 7 * time.Second }, 7 * time.Second, true, ""},
		{"negative", func(c *Config) { c.ProviderDeadline = -time.Second }, 0, false, "must not be negative"},
		{"too long", func(c *Config) {
			c.ProviderDeadline = MaxProviderDeadline + time.Second
			c.CallTimeout = 5 * time.Minute
		}, MaxProviderDeadline + time.Second, true, "at most"},
		{"call timeout too short", func(c *Config) { c.ProviderDeadline = 20 * time.Second }, 20 * time.Second, true, "call timeout 30s must exceed"},
		{"call timeout just enough", func(c *Config) { c.ProviderDeadline = 20 * time.Second; c.CallTimeout = 31 * time.Second }, 20 * time.Second, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig()
			tc.edit(cfg)
			d, known := cfg.providerDeadline()
			if tc.name != "negative" && (d != tc.want || known != tc.known) {
				t.Errorf("providerDeadline() = %v, %v; want %v, %v", d, known, tc.want, tc.known)
			}
			err := cfg.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("Validate: %v, want an error containing %q", err, tc.err)
			}
		})
	}
	if got := deadlineGrace(5*time.Second, 0); got != 2500*time.Millisecond {
		t.Errorf("grace of 5s with no slack = %v, want 2.5s", got)
	}
	if got := deadlineGrace(DefaultInProcessDeadline, 3*time.Second); got != 4*time.Second {
		t.Errorf("grace of the in-process default %v with 3s of measured slack = %v, want 4s", DefaultInProcessDeadline, got)
	}
	if got := NewConfig().redacted()["provider_deadline"]; got != DefaultInProcessDeadline.String() {
		t.Errorf("the redacted configuration states the provider deadline as %v, want %v", got, DefaultInProcessDeadline)
	}
}

// A run that shares its specs with other processes (RunOptions.Claim)
// refuses to write evidence: one bundle needs one process.
func TestClaimRefusesEvidence(t *testing.T) {
	var out strings.Builder
	ft := &failT{}
	opts := &RunOptions{Summary: &out, EvidenceDir: t.TempDir(), Claim: func(string) bool { return true }}
	if RunWith(ft, NewConfig(), opts) || !ft.failed {
		t.Fatal("RunWith with Claim and an evidence directory must refuse to start")
	}
	if !strings.Contains(out.String(), "not started") || !strings.Contains(out.String(), "evidence") {
		t.Errorf("RunWith said %q, want a refusal naming the evidence", out.String())
	}
}
