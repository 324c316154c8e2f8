package sandbox

import (
	"strings"
	"testing"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultProvider(t *testing.T) {
	tests := []struct {
		name           string
		env            map[string]string
		wantAPI        string
		wantDomain     string
		wantSandboxURL string
	}{
		{"defaults", nil, "https://api.e2b.app", "e2b.app", ""},
		{"domain only", map[string]string{EnvDomain: "example.dev"}, "https://api.example.dev", "example.dev", ""},
		{"explicit api url", map[string]string{EnvDomain: "example.dev", EnvAPIURL: "http://127.0.0.1:9/"}, "http://127.0.0.1:9", "example.dev", ""},
		{"sandbox url", map[string]string{EnvSandboxURL: "http://127.0.0.1:7/"}, "https://api.e2b.app", "e2b.app", "http://127.0.0.1:7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc, err := DefaultProvider(envMap(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if pc.ID != DefaultProviderID || pc.APIURL != tt.wantAPI || pc.Domain != tt.wantDomain ||
				pc.SandboxURL != tt.wantSandboxURL || pc.APIKeyEnv != EnvAPIKey {
				t.Errorf("got %+v", pc)
			}
		})
	}
}

func TestDefaultProvider_RejectsBadURL(t *testing.T) {
	_, err := DefaultProvider(envMap(map[string]string{EnvAPIURL: "ftp://x"}))
	if err == nil {
		t.Fatal("want error for ftp scheme")
	}
}

func TestParseConfig(t *testing.T) {
	good := `{"providers":[{"id":"acme","api_url":"https://api.acme.test","domain":"acme.test",
		"api_key_env":"ACME_KEY","regions":{"eu":"https://eu.api.acme.test"},"sized_sandboxes":true}]}`
	cfg, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Providers) != 1 || !cfg.Providers[0].SizedSandboxes || cfg.Providers[0].Regions["eu"] == "" {
		t.Errorf("got %+v", cfg)
	}

	bad := []struct{ name, json, wantInErr string }{
		{"credential field", `{"providers":[{"id":"a","api_url":"https://x.test","api_key_env":"K","api_key":"e2b_secret123"}]}`, "unknown field"},
		{"bad id", `{"providers":[{"id":"A B","api_url":"https://x.test","api_key_env":"K"}]}`, "provider id"},
		{"no key env", `{"providers":[{"id":"a","api_url":"https://x.test"}]}`, "api_key_env"},
		{"user info in url", `{"providers":[{"id":"a","api_url":"https://u:p@x.test","api_key_env":"K"}]}`, "credentials"},
		{"relative url", `{"providers":[{"id":"a","api_url":"/x","api_key_env":"K"}]}`, "scheme"},
		{"bad region url", `{"providers":[{"id":"a","api_url":"https://x.test","api_key_env":"K","regions":{"eu":"nope"}}]}`, "region"},
		{"duplicate", `{"providers":[{"id":"a","api_url":"https://x.test","api_key_env":"K"},{"id":"a","api_url":"https://y.test","api_key_env":"K"}]}`, "duplicate"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Fatalf("got %v, want error containing %q", err, tt.wantInErr)
			}
			if strings.Contains(err.Error(), "e2b_secret123") || strings.Contains(err.Error(), "u:p@") {
				t.Errorf("error leaks a credential: %v", err)
			}
		})
	}
}

func newTestPlatform(t *testing.T, env map[string]string, cfg *Config) *Platform {
	t.Helper()
	p, err := NewPlatform(&Options{Getenv: envMap(env), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlatform_ParseAndFormatID(t *testing.T) {
	cfg := &Config{Providers: []ProviderConfig{{ID: "acme", APIURL: "https://api.acme.test", APIKeyEnv: "ACME_KEY"}}}
	p := newTestPlatform(t, nil, cfg)
	tests := []struct {
		in        string
		want      QualifiedID
		wantField string
		formatted string
	}{
		{"abc123", QualifiedID{"e2b", "abc123"}, "", "abc123"},
		{"e2b:abc123", QualifiedID{"e2b", "abc123"}, "", "abc123"},
		{"acme:xyz", QualifiedID{"acme", "xyz"}, "", "acme:xyz"},
		{"nope:xyz", QualifiedID{}, "provider", ""},
		{"", QualifiedID{}, "sandbox_id", ""},
		{"acme:", QualifiedID{}, "sandbox_id", ""},
		{"../v2/sandboxes", QualifiedID{}, "sandbox_id", ""},
		{"a/b", QualifiedID{}, "sandbox_id", ""},
		{"a?b=c", QualifiedID{}, "sandbox_id", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := p.ParseID(tt.in)
			if tt.wantField != "" {
				var e *Error
				if !asError(err, &e) || e.Category != InvalidArgument || e.Field != tt.wantField {
					t.Fatalf("got %v, want invalid_argument on %s", err, tt.wantField)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v %v, want %v", got, err, tt.want)
			}
			if f := p.FormatID(got); f != tt.formatted {
				t.Errorf("FormatID = %q, want %q", f, tt.formatted)
			}
		})
	}
	if got := p.Providers(); strings.Join(got, ",") != "acme,e2b" {
		t.Errorf("Providers() = %v", got)
	}
}
