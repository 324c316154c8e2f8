package sandbox_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// inProcess returns a fake with a fake clock and a Platform wired to it
// in-process.
func inProcess(t *testing.T, opts *fakeprovider.Options) (*fakeprovider.Provider, *fakeprovider.FakeClock, *sandbox.Platform) {
	t.Helper()
	clock := fakeprovider.NewFakeClock(epoch)
	if opts == nil {
		opts = &fakeprovider.Options{}
	}
	opts.Clock = clock
	opts.Canaries = true // errors must never carry the message canaries
	fake := fakeprovider.New(opts)
	t.Cleanup(fake.Close)
	p, err := fake.Platform()
	if err != nil {
		t.Fatal(err)
	}
	return fake, clock, p
}

func TestPlatform_ListPagesAndFilters(t *testing.T) {
	fake, clock, p := inProcess(t, nil)
	ctx := context.Background()
	var ids []string
	for i := range 230 {
		seed := fakeprovider.SandboxSeed{StartedAt: epoch.Add(time.Duration(i) * time.Second), EndAt: epoch.Add(time.Hour)}
		if i%3 == 0 {
			seed.Metadata = map[string]string{"team": "blue"}
		}
		if i%5 == 0 {
			seed.State = fakeprovider.StatePaused
		}
		ids = append(ids, fake.AddSandbox(seed))
	}
	_ = clock

	// Newest first: the sandbox seeded last comes first.
	all := map[string]bool{}
	for offset := 0; offset < 230; offset += 70 {
		page, err := p.List(ctx, &sandbox.ListOptions{Limit: 70, Offset: offset})
		if err != nil {
			t.Fatal(err)
		}
		want := min(70, 230-offset)
		if len(page) != want {
			t.Fatalf("offset %d: %d items, want %d", offset, len(page), want)
		}
		if offset == 0 && page[0].SandboxID != ids[229] {
			t.Errorf("first item %s, want newest %s", page[0].SandboxID, ids[229])
		}
		for _, in := range page {
			if all[in.SandboxID] {
				t.Errorf("sandbox %s listed twice across pages", in.SandboxID)
			}
			all[in.SandboxID] = true
		}
	}
	if len(all) != 230 {
		t.Errorf("paging saw %d distinct sandboxes, want 230", len(all))
	}
	for _, e := range fake.Journal().Calls(sandbox.OpListSandboxes) {
		if l := e.Query.Get("limit"); l == "" || len(l) > 3 || l > "100" && len(l) == 3 {
			t.Errorf("asked for limit=%q", l)
		}
	}

	paused, err := p.List(ctx, &sandbox.ListOptions{States: []sandbox.State{sandbox.StatePaused}})
	if err != nil {
		t.Fatal(err)
	}
	if len(paused) != 46 {
		t.Errorf("paused: %d, want 46", len(paused))
	}
	for _, in := range paused {
		if in.Status != sandbox.StatePaused {
			t.Errorf("state filter let %s through", in.Status)
		}
	}
	blue, err := p.List(ctx, &sandbox.ListOptions{Metadata: map[string]string{"team": "blue"}, States: []sandbox.State{sandbox.StateRunning}})
	if err != nil {
		t.Fatal(err)
	}
	// i%3==0 and i%5!=0 for i in [0,230): 77 multiples of 3, 16 of 15.
	if len(blue) != 77-16 {
		t.Errorf("metadata+state filter: %d, want %d", len(blue), 77-16)
	}
}

func TestPlatform_LifecycleAgainstFake(t *testing.T) {
	fake, clock, p := inProcess(t, nil)
	ctx := context.Background()
	sbx, err := p.Create(ctx, &sandbox.CreateOptions{Timeout: time.Minute, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := sbx.RefreshInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.EndAt == nil || !info.EndAt.Equal(epoch.Add(time.Minute)) || info.CPUCount == nil || info.Template != "base" {
		t.Errorf("refreshed info %+v", info)
	}
	if err := sbx.SetTimeout(ctx, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	ext, err := p.GetInfoByID(ctx, sbx.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ext.EndAt.Equal(epoch.Add(10 * time.Minute)) {
		t.Errorf("end_at after SetTimeout: %v", ext.EndAt)
	}
	clock.Advance(11 * time.Minute)
	if _, err := p.GetInfoByID(ctx, sbx.ID(), nil); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("expired sandbox: %v, want not_found", err)
	}
	if err := sbx.Kill(ctx); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("killing an expired sandbox: %v", err)
	}

	other, err := p.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.KillByID(ctx, other.ID(), nil); err != nil {
		t.Fatal(err)
	}
	if err := p.KillByID(ctx, other.ID(), nil); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("second kill: %v, want not_found", err)
	}
	if fake.LiveCount() != 0 {
		t.Errorf("%d sandboxes still live", fake.LiveCount())
	}

	// No by-ID call connects.
	if n := fake.Journal().Count(sandbox.OpConnectSandbox); n != 0 {
		t.Errorf("%d connect calls", n)
	}
	// Connect does, and the handle is usable.
	third, _ := p.Create(ctx, nil)
	conn, err := p.Connect(ctx, third.ID(), nil)
	if err != nil || conn.ID() != third.ID() {
		t.Fatalf("connect: %v", err)
	}
	if fake.Journal().Count(sandbox.OpConnectSandbox) != 1 {
		t.Errorf("connect not journaled once")
	}

	// KeepLifetime reaches a sandbox without renewing it.
	short, _ := p.Create(ctx, &sandbox.CreateOptions{Timeout: 5 * time.Second})
	before, _ := p.GetInfoByID(ctx, short.ID(), nil)
	if _, err := p.Connect(ctx, short.ID(), &sandbox.ConnectOptions{KeepLifetime: true}); err != nil {
		t.Fatal(err)
	}
	after, _ := p.GetInfoByID(ctx, short.ID(), nil)
	if !after.EndAt.Equal(*before.EndAt) {
		t.Errorf("KeepLifetime moved end_at from %v to %v", before.EndAt, after.EndAt)
	}
	calls := fake.Journal().Calls(sandbox.OpConnectSandbox)
	if body := string(calls[len(calls)-1].Body); body != `{"timeout":0}` {
		t.Errorf("KeepLifetime connect body %s", body)
	}
}

func TestPlatform_ErrorCategoriesFromFaults(t *testing.T) {
	fake, _, p := inProcess(t, nil)
	ctx := context.Background()
	id := fake.AddSandbox(fakeprovider.SandboxSeed{})
	for _, status := range []int{400, 401, 403, 404, 409, 410, 429, 500, 502, 503, 504, 507} {
		h := fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Status: status, Times: 1})
		_, err := p.GetInfoByID(ctx, id, nil)
		h.Clear()
		var e *sandbox.Error
		if !errors.As(err, &e) || e.HTTPStatus != status || e.Category != sandbox.CategoryForStatus(status) {
			t.Errorf("status %d: got %v", status, err)
			continue
		}
		if leaked, ok := fake.FindCanary(e.Error()); ok {
			t.Errorf("status %d: error text leaks canary %q", status, leaked)
		}
		if strings.Contains(e.Error(), "http://") || strings.Contains(e.Error(), "https://") {
			t.Errorf("status %d: error text has a URL: %q", status, e.Error())
		}
	}

	h := fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Reset: true, Times: 1})
	_, err := p.GetInfoByID(ctx, id, nil)
	h.Clear()
	if sandbox.CategoryOf(err) != sandbox.Unavailable {
		t.Errorf("reset: %v, want unavailable", err)
	}

	h = fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpGetSandbox, Malformed: true, Times: 1})
	_, err = p.GetInfoByID(ctx, id, nil)
	h.Clear()
	if sandbox.CategoryOf(err) != sandbox.ProviderError {
		t.Errorf("malformed: %v, want provider_error", err)
	}

	// The fault holds the call until Release, so only the deadline ends it.
	h = fake.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, Hang: true})
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = guarded(t, func() error { return p.SetTimeoutByID(dctx, id, time.Minute, nil) })
	if sandbox.CategoryOf(err) != sandbox.Timeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang past the deadline: %v, want timeout", err)
	}
	h.Release()
	h.Clear()

	// Real platform states.
	fake.SetState(id, fakeprovider.State("pausing"))
	if err := p.SetTimeoutByID(ctx, id, time.Minute, nil); !errors.Is(err, sandbox.ErrConflict) {
		t.Errorf("set timeout on a pausing sandbox: %v, want conflict", err)
	}
}

func TestPlatform_UnauthenticatedAndLimits(t *testing.T) {
	fake, _, _ := inProcess(t, &fakeprovider.Options{SandboxLimit: 2})
	wrong, _ := sandbox.NewPlatform(withEnv(fake.PlatformOptions(), sandbox.EnvAPIKey, "e2b_00000000"))
	if _, err := wrong.List(context.Background(), nil); !errors.Is(err, sandbox.ErrUnauthenticated) {
		t.Errorf("wrong key: %v", err)
	}
	_, _, p := inProcess(t, &fakeprovider.Options{SandboxLimit: 2})
	for range 2 {
		if _, err := p.Create(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Create(context.Background(), nil); !errors.Is(err, sandbox.ErrRateLimited) {
		t.Errorf("beyond the limit: %v, want rate_limited", err)
	}
	if _, err := p.Create(context.Background(), &sandbox.CreateOptions{Template: "no-such-template"}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("unknown template: %v, want not_found", err)
	}
}

// TestPlatform_QualifiedIDsRouteToTheirProvider serves two fakes on
// loopback and checks each call reaches the one its ID names, and that
// by-ID calls leave no connection open.
func TestPlatform_QualifiedIDsRouteToTheirProvider(t *testing.T) {
	e2b := fakeprovider.New(nil)
	acme := fakeprovider.New(&fakeprovider.Options{AcceptResources: true})
	t.Cleanup(e2b.Close)
	t.Cleanup(acme.Close)
	e2bSrv, acmeSrv := e2b.Start(t), acme.Start(t)

	env := map[string]string{sandbox.EnvAPIKey: e2b.APIKey(), sandbox.EnvAPIURL: e2bSrv.URL(), "ACME_KEY": acme.APIKey()}
	p, err := sandbox.NewPlatform(&sandbox.Options{
		Getenv: func(k string) string { return env[k] },
		Config: &sandbox.Config{Providers: []sandbox.ProviderConfig{{ID: "acme", APIURL: acmeSrv.URL(), APIKeyEnv: "ACME_KEY", SizedSandboxes: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	idE2B := e2b.AddSandbox(fakeprovider.SandboxSeed{})
	idAcme := acme.AddSandbox(fakeprovider.SandboxSeed{})

	calls := []func() error{
		func() error { _, err := p.GetInfoByID(ctx, idE2B, nil); return err },
		func() error {
			_, err := p.GetInfoByID(ctx, "acme:"+idAcme, &sandbox.CallOptions{SandboxDomain: "never.used.test"})
			return err
		},
		func() error { return p.SetTimeoutByID(ctx, "acme:"+idAcme, time.Minute, nil) },
		func() error {
			return p.SetTimeoutByID(ctx, idAcme, time.Minute, &sandbox.CallOptions{Provider: "acme"})
		},
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		waitForNoConnections(t, e2bSrv, acmeSrv)
	}
	if _, err := p.GetInfoByID(ctx, idAcme, nil); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("bare ID must go to the default provider: %v", err)
	}
	if _, err := p.GetInfoByID(ctx, "acme:"+idAcme, &sandbox.CallOptions{Provider: "e2b"}); !errors.Is(err, sandbox.ErrInvalidArgument) {
		t.Errorf("conflicting provider override: %v", err)
	}
	if got := acme.Journal().Count(sandbox.OpGetSandbox); got != 1 {
		t.Errorf("acme saw %d gets, want 1", got)
	}
	if got := acme.Journal().Count(sandbox.OpSetTimeout); got != 2 {
		t.Errorf("acme saw %d set-timeouts, want 2", got)
	}
	for _, f := range []*fakeprovider.Provider{e2b, acme} {
		for _, e := range f.Journal().Entries() {
			if e.Op == sandbox.OpConnectSandbox || e.Envd {
				t.Errorf("by-ID call made %s %s", e.Method, e.Path)
			}
			if strings.Contains(e.Path, ":") {
				t.Errorf("the platform saw a qualified ID: %s", e.Path)
			}
		}
	}
	sized, err := p.Create(ctx, &sandbox.CreateOptions{Provider: "acme", CPUCount: 4, MemoryMB: 1024})
	if err != nil {
		t.Fatal(err)
	}
	info, err := sized.RefreshInfo(ctx)
	if err != nil || *info.CPUCount != 4 || *info.MemoryMB != 1024 || !strings.HasPrefix(info.SandboxID, "acme:") {
		t.Errorf("sized sandbox: %+v %v", info, err)
	}
}

// waitForNoConnections fails t unless servers come to hold no open
// connection (a hang fails after hangGuard).
func waitForNoConnections(t *testing.T, servers ...*fakeprovider.Server) {
	t.Helper()
	open := 0
	if !waitUntil(hangGuard, 5*time.Millisecond, func() bool {
		open = 0
		for _, s := range servers {
			open += s.OpenConnections()
		}
		return open == 0
	}) {
		t.Fatalf("%d connections still open after a by-ID call", open)
	}
}

var _ http.RoundTripper = (*fakeprovider.Provider)(nil).RoundTripper()
