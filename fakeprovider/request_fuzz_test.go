package fakeprovider_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	pathpkg "path"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// fuzzMethods are the methods a fuzzed request may use.
var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodHead}

// fuzzSandbox is the ID of the sandbox every fuzzed provider holds.
const fuzzSandbox = "fuzzsbx0001"

// FuzzProviderRequest sends arbitrary control-plane requests to a fresh
// fake: any method, path, query and body, with or without the API key.
// The fake must never panic, must answer with a status E2B documents, must
// answer every error in E2B's {code, message} shape and every success with
// JSON, must journal the request, and must keep its own invariants.
func FuzzProviderRequest(f *testing.F) {
	seeds := []struct {
		method      uint8
		path, query string
		body        string
	}{
		{0, "/v2/sandboxes", "", ""},
		{0, "/v2/sandboxes", "state=running&state=paused&limit=2", ""},
		{0, "/v2/sandboxes", "limit=0", ""},
		{0, "/v2/sandboxes", "limit=101&nextToken=zz", ""},
		{0, "/v2/sandboxes", "metadata=a%3Db%26c%3Dd", ""},
		{0, "/v2/sandboxes", "metadata=%ZZ", ""},
		{0, "/v2/sandboxes", "state=bogus", ""},
		{1, "/sandboxes", "", `{"templateID":"base","timeout":60}`},
		{1, "/sandboxes", "", `{"templateID":"base","timeout":60,"metadata":{"k":"v"},"envVars":{"A":"b"},"secure":true}`},
		{1, "/sandboxes", "", `{"templateID":"nope"}`},
		{1, "/sandboxes", "", `{"templateID":"base","timeout":-1}`},
		{1, "/sandboxes", "", `{"templateID":"base","cpuCount":4,"memoryMB":512}`},
		{1, "/sandboxes", "", `{"templateID":`},
		{1, "/sandboxes", "", `[]`},
		{1, "/sandboxes", "", `{"templateID":"base","autoPause":true,"mcp":{},"network":{"allowOut":["x"]}}`},
		{0, "/sandboxes/" + fuzzSandbox, "", ""},
		{0, "/sandboxes/NOPE", "", ""},
		{2, "/sandboxes/" + fuzzSandbox, "", ""},
		{1, "/sandboxes/" + fuzzSandbox + "/timeout", "", `{"timeout":30}`},
		{1, "/sandboxes/" + fuzzSandbox + "/timeout", "", `{"timeout":"30"}`},
		{1, "/sandboxes/" + fuzzSandbox + "/connect", "", `{"timeout":30}`},
		{1, "/sandboxes/" + fuzzSandbox + "/connect", "", `{}`},
		{1, "/sandboxes/" + fuzzSandbox + "/pause", "", ``},
		{0, "/sandboxes", "", ""},
		{3, "/v2/sandboxes", "", "{}"},
		{0, "/../v2/sandboxes", "", ""},
		{0, "//sandboxes//x", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, []byte(s.body), true)
	}
	f.Add(uint8(0), "/v2/sandboxes", "", []byte(nil), false)
	f.Fuzz(func(t *testing.T, method uint8, path, query string, body []byte, withKey bool) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		clock := fakeprovider.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		p := fakeprovider.New(&fakeprovider.Options{Clock: clock, NoDaemon: true, SandboxLimit: 3})
		defer p.Close()
		p.AddSandbox(fakeprovider.SandboxSeed{ID: fuzzSandbox})
		target := "https://api.fuzz.sandboxkit.test" + path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(fuzzMethods[int(method)%len(fuzzMethods)], "https://api.fuzz.sandboxkit.test/", bytes.NewReader(body))
		if err != nil {
			t.Skip()
		}
		// Set the URL by hand: any bytes the fuzzer finds, as a server
		// would see them after parsing the request line.
		req.URL.Path, req.URL.RawQuery = path, query
		req.RequestURI = target
		req.Header.Set("Content-Type", "application/json")
		if withKey {
			req.Header.Set("X-API-Key", p.APIKey())
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)

		switch rec.Code {
		case 200, 201, 204, 400, 401, 404, 409, 429:
		case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			// http.ServeMux sends a path that is not clean ("//x", "/a/../b")
			// to its clean form before any handler runs; the SDK never
			// sends one.
			if clean := pathpkg.Clean(path); clean == path && !strings.HasSuffix(path, "/") {
				t.Fatalf("%s %s: redirect %d for a clean path", req.Method, path, rec.Code)
			}
			return
		default:
			t.Fatalf("%s %s?%s: status %d", req.Method, path, query, rec.Code)
		}
		out := rec.Body.Bytes()
		switch {
		case req.Method == http.MethodHead:
		case rec.Code == 204:
			if len(out) != 0 {
				t.Fatalf("204 with a body %q", out)
			}
		case rec.Code >= 400:
			var e struct {
				Code    *int    `json:"code"`
				Message *string `json:"message"`
			}
			if err := json.Unmarshal(out, &e); err != nil || e.Code == nil || *e.Code != rec.Code || e.Message == nil {
				t.Fatalf("error body %q for status %d", out, rec.Code)
			}
		default:
			if !json.Valid(out) {
				t.Fatalf("success body is not JSON: %q", out)
			}
		}
		if n := p.Journal().Len(); n != 1 {
			t.Fatalf("%d journal entries, want 1", n)
		}
		if e := p.Journal().Entries()[0]; e.Status != rec.Code {
			t.Fatalf("journal status %d, response %d", e.Status, rec.Code)
		}
		// Invariants: within the limit (the seeded sandbox is exempt), and
		// every live sandbox is consistent.
		if n := p.LiveCount(); n > 4 {
			t.Fatalf("%d live sandboxes", n)
		}
		for _, s := range p.LiveSandboxes() {
			if s.EndAt.Before(s.StartedAt) {
				t.Fatalf("sandbox %s ends before it starts", s.ID)
			}
			if _, ok := p.Sandbox(s.ID); !ok {
				t.Fatalf("listed sandbox %s not found", s.ID)
			}
		}
	})
}
