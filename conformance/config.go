package conformance

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Config says which server the kit checks and how. Build one with
// [NewConfig], set the fields that differ, and pass it to [Run] or
// [Describe]. The kit reads it when the specs run, not when they are
// registered, so an embedding suite may edit it in its own BeforeEach.
type Config struct {
	// ServerCommand starts the server under test as a stdio MCP server (the
	// command and its arguments). With ServerURL set too, the command is
	// started once and the kit connects to ServerURL over Streamable HTTP.
	// Empty with an empty ServerURL means the in-process reference server.
	ServerCommand []string
	// ServerEnv is added to the environment of ServerCommand ("KEY=value").
	// The kit adds E2B_API_URL, E2B_API_KEY, E2B_DOMAIN and E2B_SANDBOX_URL
	// pointing at its fake provider on loopback.
	ServerEnv []string
	// ServerURL is a Streamable HTTP endpoint (e.g. http://127.0.0.1:8080/mcp).
	ServerURL string
	// Headers are sent with every HTTP request to ServerURL (for example an
	// Authorization bearer token).
	Headers map[string]string
	// SecondToken is the bearer token of a second principal of the server
	// at ServerURL (HANDLE-1): the handle specs check that one principal's
	// sandboxes and commands are not_found to the other. Empty: those
	// specs read "not applicable".
	SecondToken string
	// FakeAddr is the loopback address the kit serves its fake provider on
	// for a server in another process. Default "127.0.0.1:0" (any free port).
	// A server that is already running must have been started with the
	// fake's address in its environment, so give a fixed port then.
	FakeAddr string
	// FakeAPIKey is the API key the fake accepts. Default: a random key for
	// each run. A server that is already running needs a fixed one.
	FakeAPIKey string
	// ToolNames maps contract tool names to the names the server uses, for
	// servers that call them differently (the plain form of a tool map).
	ToolNames map[string]string
	// Tools adapts the server's tools to the contract's, by contract tool
	// name: names, argument names and units, and where a result's values
	// are (see [ParseToolMap]). A name here wins over ToolNames.
	Tools map[string]ToolAdapter
	// Profile is the design the server declares (see [Profiles]); empty
	// means [ProfileContract]. Specs of rules that do not apply to it are
	// skipped as not applicable, with the reason. RequireAll ignores it:
	// certification is the full contract.
	Profile Profile
	// ExpectedFailures is the run's baseline (see [ParseExpectedFailures]):
	// specs or rules expected to fail, each with a reason. With it the run
	// passes when exactly those fail.
	ExpectedFailures []ExpectedFailure
	// RequireAll turns every skip (a tool the server does not advertise)
	// into a failure, for certification.
	RequireAll bool
	// CallTimeout bounds each MCP request the kit makes. Default 30 s. A
	// call that outlives it gets the spec's measured slack on top (8 times
	// the slowest of a few tools/list round trips): a loaded machine does
	// not fail a call the server is still answering.
	CallTimeout time.Duration
	// SettleTimeout bounds how long the kit waits, after a spec closes its
	// sessions, for the server to destroy the sandboxes they owned.
	// Default 5 s; in cloud mode at least 30 s.
	SettleTimeout time.Duration
	// ProviderDeadline is the longest the server under test waits for the
	// provider to answer one request before it gives up with a timeout
	// tool error (the reference server: serve --provider-timeout and
	// --file-timeout). The deadline specs (errors.hang, errors.drip,
	// errors.oversized) make the provider hold or stretch its answers and
	// expect every tool error within this deadline plus a grace: half of it,
	// and a slack measured in the same run from the latency of no-op calls. The in-process reference server is started with
	// it; zero gives it [DefaultInProcessDeadline] ([DefaultInProcessRealSandboxDeadline] with a
	// FakeDaemon). For a server in
	// another process zero means unknown: the deadline specs are skipped
	// (failed with RequireAll). At most [MaxProviderDeadline], and
	// CallTimeout must exceed it plus half of it.
	ProviderDeadline time.Duration
	// CrashBound is how long, after a stdio server command is killed with
	// SIGKILL, the kit waits for the command started again with the same
	// instance ID (SANDBOXKIT_INSTANCE) to have destroyed every sandbox the
	// dead process owned (spec cleanup.crash-restart-sweeps). Zero gives
	// [DefaultCrashBound]; at most [MaxCrashBound].
	CrashBound time.Duration
	// Policies are what the server under test declares about itself: its
	// strict-message policy and its limits, which the WIRE and QUOTA rules
	// bind only where declared. The in-process reference server's own are
	// known; zero fields declare nothing.
	Policies Policies
	// IdleTimeout is how long the server under test keeps a Streamable HTTP
	// session that receives no request before it closes it and destroys
	// its sandboxes (the reference server: serve --session-timeout). The
	// in-process reference server's idle-timeout listener is started with
	// it; zero gives it [DefaultInProcessIdleTimeout]. For a server URL zero
	// means unknown: spec cleanup.idle-timeout is skipped (failed with
	// RequireAll). At most [MaxIdleTimeout].
	IdleTimeout time.Duration

	// Cloud runs the kit against the real provider that the environment
	// names (E2B_API_KEY, and E2B_API_URL / E2B_DOMAIN / E2B_SANDBOX_URL
	// when set; ServerEnv entries override the process environment) instead
	// of the fake. The run refuses to start without credentials. Specs that
	// need the fake (label needs-fake) are left out; the cloud-only specs
	// cross-check the server against the platform through the kit's own
	// SDK. The in-process target is the reference server on the real
	// platform; server commands get the real environment. Every sandbox the
	// run creates is tracked in a state file from the moment its ID is
	// seen and destroyed at the end, even when specs fail.
	Cloud bool
	// StateDir holds the state files of cloud runs (the sandboxes each run
	// created, for `sandboxkit sweep`). Default [cloudstate.DefaultStateDir].
	StateDir string
	// RunID names the run in its state file and evidence. Default: a fresh
	// [cloudstate.NewRunID].
	RunID string

	// E2B1 is how a server on e2b 1.x, which reads no E2B_API_URL, reaches
	// the fake (see [fakeprovider.E2B1Path]): the debug endpoints (the fake
	// also served on localhost 3000, 49983 and 49999, and E2B_DEBUG=true
	// for the server) or the Node preload that redirects fetch. Empty: the
	// 2.x variables only.
	E2B1 fakeprovider.E2B1Path
	// E2B1DebugAddrs replaces the debug endpoints' fixed addresses (a seam
	// for tests, which must not contend for the fixed ports). Zero: where
	// e2b 1.x looks.
	E2B1DebugAddrs fakeprovider.DebugAddrs
	// FakeDaemon, when set, builds every fake sandbox's daemon in place of
	// the in-memory one ([fakeprovider.Options.NewDaemon]), for example
	// [fakeprovider.NamespaceDaemon]'s real Linux sandboxes.
	FakeDaemon func(fakeprovider.DaemonConfig) fakeprovider.Daemon
}

// DefaultInProcessDeadline is the provider deadline the in-process
// reference server gets when [Config.ProviderDeadline] is zero: short, so
// that the deadline specs take a few seconds (each holds every tool's call
// for the deadline, twice), and far above what a healthy call to the
// in-process fake takes even on a loaded machine (the largest, a 2 MiB
// file write, takes tens of milliseconds; under the race detector a few
// hundred).
const DefaultInProcessDeadline = 2 * time.Second

// DefaultInProcessIdleTimeout is the HTTP session idle timeout of the
// in-process reference server's idle-timeout listener when
// [Config.IdleTimeout] is zero.
const DefaultInProcessIdleTimeout = 2 * time.Second

// MaxIdleTimeout bounds [Config.IdleTimeout]: the idle spec waits it out.
const MaxIdleTimeout = 2 * time.Minute

// idleTimeout returns the server's idle timeout as the kit knows it, and
// whether it knows it.
func (c *Config) idleTimeout() (time.Duration, bool) {
	return declaredOr(c, c.IdleTimeout, DefaultInProcessIdleTimeout)
}

// DefaultCrashBound is the crash bound when [Config.CrashBound] is zero.
const DefaultCrashBound = 30 * time.Second

// MaxCrashBound bounds [Config.CrashBound].
const MaxCrashBound = 10 * time.Minute

// crashBound returns the crash bound in force.
func (c *Config) crashBound() time.Duration {
	if c.CrashBound > 0 {
		return c.CrashBound
	}
	return DefaultCrashBound
}

// MaxProviderDeadline bounds [Config.ProviderDeadline].
const MaxProviderDeadline = 40 * time.Second

// providerDeadline returns the server's provider deadline as the kit knows
// it, and whether it knows it.
func (c *Config) providerDeadline() (time.Duration, bool) {
	ref := DefaultInProcessDeadline
	if c.realSandboxes() {
		ref = DefaultInProcessRealSandboxDeadline
	}
	return declaredOr(c, c.ProviderDeadline, ref)
}

// DefaultInProcessRealSandboxDeadline is the provider deadline the
// in-process reference server gets when [Config.FakeDaemon] makes real
// sandboxes (conform --exec namespace) and [Config.ProviderDeadline] is
// zero. Creating such a sandbox is work, not a no-op: two process starts
// and a dozen mounts, which took 1.2 to 2.1 s each with four spec
// processes creating at once at load 28 on 2 cores, past
// [DefaultInProcessDeadline]. The deadline specs then hold their faulted
// calls for this deadline rather than one derived from no-op latency
// (useDerivedDeadline), since their sandboxes are created under it too.
const DefaultInProcessRealSandboxDeadline = 10 * time.Second

// realSandboxes reports whether the fake's sandboxes are real (a
// [Config.FakeDaemon] is set), so creating one costs work.
func (c *Config) realSandboxes() bool { return c.FakeDaemon != nil && !c.Cloud }

// NewConfig returns a Config with every default: the in-process reference
// server, the fake on a free loopback port.
func NewConfig() *Config {
	return &Config{
		FakeAddr:      "127.0.0.1:0",
		CallTimeout:   30 * time.Second,
		SettleTimeout: 5 * time.Second,
	}
}

// TargetKind names how the kit reaches the server under test.
type TargetKind string

// The kinds of target.
const (
	TargetInProcess TargetKind = "in-process"
	TargetStdio     TargetKind = "stdio"
	TargetHTTP      TargetKind = "http"
)

// Kind returns how the kit reaches the server.
func (c *Config) Kind() TargetKind {
	switch {
	case c.ServerURL != "":
		return TargetHTTP
	case len(c.ServerCommand) > 0:
		return TargetStdio
	default:
		return TargetInProcess
	}
}

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.ServerURL != "" {
		u, err := url.Parse(c.ServerURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("server URL must be an absolute http(s) URL"))
		}
	}
	for _, kv := range c.ServerEnv {
		if !strings.Contains(kv, "=") {
			errs = append(errs, fmt.Errorf("server environment entry %q is not KEY=value", kv))
		}
	}
	for k := range c.Headers {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, errors.New("a header name is empty"))
		}
	}
	if c.FakeAPIKey != "" && !strings.HasPrefix(c.FakeAPIKey, "e2b_") {
		errs = append(errs, errors.New(`fake API key must start with "e2b_"`))
	}
	for from, to := range c.ToolNames {
		if !isContractTool(from) {
			errs = append(errs, fmt.Errorf("tool name mapping: %q is not a contract tool", from))
		}
		if to == "" {
			errs = append(errs, fmt.Errorf("tool name mapping: %q maps to an empty name", from))
		}
	}
	if len(c.Tools) > 0 {
		tools := make(map[string]ToolAdapter, len(c.Tools))
		for k, v := range c.Tools {
			tools[k] = v
		}
		if err := validateToolMap(tools); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.Profile.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateExpected(c.ExpectedFailures); err != nil {
		errs = append(errs, err)
	}
	if err := c.Policies.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.IdleTimeout < 0 || c.IdleTimeout > MaxIdleTimeout {
		errs = append(errs, fmt.Errorf("idle timeout %v: want 0 (unknown; %v in-process) to %v", c.IdleTimeout, DefaultInProcessIdleTimeout, MaxIdleTimeout))
	}
	if c.CrashBound < 0 || c.CrashBound > MaxCrashBound {
		errs = append(errs, fmt.Errorf("crash bound %v: want 0 (the default, %v) to %v", c.CrashBound, DefaultCrashBound, MaxCrashBound))
	}
	if c.CallTimeout < 0 || c.SettleTimeout < 0 || c.ProviderDeadline < 0 {
		errs = append(errs, errors.New("timeouts must not be negative"))
	}
	if c.ProviderDeadline > MaxProviderDeadline {
		errs = append(errs, fmt.Errorf("provider deadline %v: at most %v (the deadline specs hold the provider's answers past it, once per tool)", c.ProviderDeadline, MaxProviderDeadline))
	}
	if d, ok := c.providerDeadline(); ok && c.CallTimeout > 0 && c.CallTimeout <= d+deadlineGrace(d, 0) {
		errs = append(errs, fmt.Errorf("call timeout %v must exceed the provider deadline %v plus its grace %v", c.CallTimeout, d, deadlineGrace(d, 0)))
	}
	if c.RunID != "" && !cloudstate.ValidRunID(c.RunID) {
		errs = append(errs, fmt.Errorf("run ID %q: want letters, digits, '.', '_' or '-' (at most 64)", c.RunID))
	}
	if c.Cloud {
		if c.FakeAPIKey != "" {
			errs = append(errs, errors.New("cloud mode uses no fake provider: a fake API key makes no sense"))
		}
		p, err := sandbox.NewPlatform(&sandbox.Options{Getenv: c.cloudGetenv})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cloud mode: provider configuration: %w", err))
		case !p.HasCredentials(sandbox.DefaultProviderID):
			errs = append(errs, errNoCredentials)
		}
	}
	return errors.Join(errs...)
}

// cloudGetenv reads cloud mode's environment: ServerEnv entries first (the
// last one of a name wins), then the process environment.
func (c *Config) cloudGetenv(key string) string {
	for i := len(c.ServerEnv) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.ServerEnv[i], "="); ok && k == key {
			return v
		}
	}
	return os.Getenv(key)
}

// stateDir is StateDir or the default.
func (c *Config) stateDir() string {
	if c.StateDir != "" {
		return c.StateDir
	}
	return cloudstate.DefaultStateDir()
}

// settle is how long the kit waits for a closed session's sandboxes to go.
func (c *Config) settle() time.Duration {
	if c.Cloud && c.SettleTimeout < cloudMinSettle {
		return cloudMinSettle
	}
	return c.SettleTimeout
}

// cloudMinSettle is the least settle time in cloud mode: real providers
// take a while to destroy a sandbox.
const cloudMinSettle = 30 * time.Second

// Mode is [evidence.ModeCloud] for a cloud run and [evidence.ModeLoopback]
// for a run against the fake provider (in-process or on loopback).
func (c *Config) Mode() evidence.Mode {
	if c.Cloud {
		return evidence.ModeCloud
	}
	return evidence.ModeLoopback
}

// redacted describes the configuration for evidence, with every value that
// may be secret replaced.
func (c *Config) redacted() map[string]any {
	m := map[string]any{
		"mode":           c.Mode(),
		"target":         string(c.Kind()),
		"require_all":    c.RequireAll,
		"call_timeout":   c.CallTimeout.String(),
		"settle_timeout": c.settle().String(),
	}
	if d, ok := c.providerDeadline(); ok {
		m["provider_deadline"] = d.String()
	}
	if len(c.ServerCommand) > 0 {
		m["server_command"] = append([]string(nil), c.ServerCommand...)
	}
	if len(c.ServerEnv) > 0 {
		var env []string
		for _, kv := range c.ServerEnv {
			k, _, _ := strings.Cut(kv, "=")
			env = append(env, k+"=[REDACTED]")
		}
		m["server_env"] = env
	}
	if c.ServerURL != "" {
		m["server_url"] = c.ServerURL
	}
	if len(c.Headers) > 0 {
		h := map[string]string{}
		for k := range c.Headers {
			h[k] = "[REDACTED]"
		}
		m["headers"] = h
	}
	if len(c.ToolNames) > 0 {
		m["tool_names"] = c.ToolNames
	}
	if len(c.Tools) > 0 {
		names := map[string]string{}
		for k := range c.Tools {
			names[k] = c.toolName(k)
		}
		m["tool_adapters"] = names
	}
	if c.Profile != "" {
		m["profile"] = string(c.Profile)
	}
	if !c.Cloud && c.Kind() != TargetInProcess {
		m["fake_addr"] = c.FakeAddr
		m["fake_api_key_fixed"] = c.FakeAPIKey != ""
	}
	return m
}

// toolName maps a contract tool name to the server's.
func (c *Config) toolName(contract string) string {
	if n := c.Tools[contract].Name; n != "" {
		return n
	}
	if n, ok := c.ToolNames[contract]; ok {
		return n
	}
	return contract
}

// ContractTools lists the tools of the contract, in its order: the tool
// table of contract/tools.md (TOOLS-1), through package toolset.
func ContractTools() []string { return toolset.Names() }

func isContractTool(name string) bool {
	for _, t := range ContractTools() {
		if t == name {
			return true
		}
	}
	return false
}
