package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// familyPlatform returns a fake that serves only one route family and a
// Platform whose default provider is configured for that family.
func familyPlatform(t *testing.T, family fakeprovider.RouteFamily, routes string) (*fakeprovider.Provider, *sandbox.Platform) {
	t.Helper()
	fake := fakeprovider.New(&fakeprovider.Options{Clock: fakeprovider.NewFakeClock(epoch), Routes: family})
	t.Cleanup(fake.Close)
	opts := fake.PlatformOptions()
	opts.Config = &sandbox.Config{Providers: []sandbox.ProviderConfig{{
		ID: sandbox.DefaultProviderID, APIURL: fakeprovider.APIURL, Domain: sandbox.DefaultDomain,
		APIKeyEnv: sandbox.EnvAPIKey, Routes: routes,
	}}}
	p, err := sandbox.NewPlatform(opts)
	if err != nil {
		t.Fatal(err)
	}
	return fake, p
}

// TestPlatform_RouteFamilies drives create, connect, a command and kill on
// each route family against a fake that refuses the other one.
func TestPlatform_RouteFamilies(t *testing.T) {
	for _, tt := range []struct {
		name        string
		family      fakeprovider.RouteFamily
		routes      string
		create      string // path of the create request
		connect     string // path prefix of the connect request
		wantSecure  bool   // body carries "secure": true
		refusedPath string // the other family's create: refused by this fake
	}{
		{"v1 (default)", fakeprovider.V1Routes, "", "/sandboxes", "/sandboxes/", true, "/v2/sandboxes"},
		{"v2", fakeprovider.V2Routes, sandbox.RoutesV2, "/v2/sandboxes", "/v2/sandboxes/", false, "/sandboxes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake, p := familyPlatform(t, tt.family, tt.routes)
			ctx := context.Background()
			sbx, err := p.Create(ctx, &sandbox.CreateOptions{Timeout: time.Minute, EnvVars: map[string]string{"GREETING": "hi"}})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			calls := fake.Journal().Calls(sandbox.OpCreateSandbox)
			if len(calls) != 1 || calls[0].Path != tt.create {
				t.Fatalf("create calls %+v, want one on %s", calls, tt.create)
			}
			var body map[string]any
			if err := json.Unmarshal(calls[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if secure, has := body["secure"]; (secure == true) != tt.wantSecure || (has && !tt.wantSecure) {
				t.Errorf("create body %s: secure want %v", calls[0].Body, tt.wantSecure)
			}
			// Either way the sandbox is secured: its daemon requires the token.
			if rec, _ := fake.Sandbox(sbx.QualifiedID().ID); rec.EnvdAccessToken == "" {
				t.Error("sandbox has no envdAccessToken")
			}
			out, err := sbx.Envd(nil).RunOutput(ctx, "echo $GREETING", nil)
			if err != nil || strings.TrimSpace(string(out.Stdout)) != "hi" {
				t.Fatalf("command on the new sandbox: %+v, %v", out, err)
			}

			conn, err := p.Connect(ctx, sbx.ID(), nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			cc := fake.Journal().Calls(sandbox.OpConnectSandbox)
			if len(cc) != 1 || !strings.HasPrefix(cc[0].Path, tt.connect) {
				t.Fatalf("connect calls %+v, want one under %s", cc, tt.connect)
			}
			if out, err := conn.Envd(nil).RunOutput(ctx, "echo ok", nil); err != nil || strings.TrimSpace(string(out.Stdout)) != "ok" {
				t.Fatalf("command after connect: %+v, %v", out, err)
			}
			if err := p.KillByID(ctx, sbx.ID(), nil); err != nil {
				t.Fatalf("kill: %v", err)
			}

			// The Platform configured for the other family fails: this
			// fake really refuses it.
			other := sandbox.RoutesV2
			if tt.routes == sandbox.RoutesV2 {
				other = sandbox.RoutesV1
			}
			_, wrong := familyPlatform(t, tt.family, other)
			if _, err := wrong.Create(ctx, nil); !errors.Is(err, sandbox.ErrNotFound) {
				t.Errorf("create on the refused family (%s): %v, want not_found", tt.refusedPath, err)
			}
		})
	}
}

func TestPlatform_V2RefusesInsecure(t *testing.T) {
	fake, p := familyPlatform(t, fakeprovider.AllRoutes, sandbox.RoutesV2)
	_, err := p.Create(context.Background(), &sandbox.CreateOptions{Insecure: true})
	var se *sandbox.Error
	if !errors.As(err, &se) || se.Category != sandbox.InvalidArgument || se.Field != "insecure" {
		t.Fatalf("insecure create on v2: %v, want invalid_argument insecure", err)
	}
	if n := fake.Journal().Count(sandbox.OpCreateSandbox); n != 0 {
		t.Errorf("%d create calls, want none", n)
	}
}

func TestParseConfig_Routes(t *testing.T) {
	if _, err := sandbox.ParseConfig([]byte(`{"providers":[{"id":"acme","api_url":"https://api.acme.test","api_key_env":"K","routes":"v3"}]}`)); err == nil {
		t.Error(`routes "v3" accepted`)
	}
	cfg, err := sandbox.ParseConfig([]byte(`{"providers":[{"id":"acme","api_url":"https://api.acme.test","api_key_env":"K","routes":"v2"}]}`))
	if err != nil || cfg.Providers[0].Routes != sandbox.RoutesV2 {
		t.Fatalf("routes v2: %+v, %v", cfg, err)
	}
}
