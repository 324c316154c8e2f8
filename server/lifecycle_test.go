package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// checkMetadata asserts META-1..3 on one metadata object.
func checkMetadata(t *testing.T, m map[string]any) {
	t.Helper()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := slices.Clone(metadataSchema("").PropertyOrder) // META-1: the nine keys
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Errorf("META-1: keys = %v, want exactly %v", keys, want)
	}
	for _, k := range []string{"started_at", "end_at"} {
		switch v := m[k].(type) {
		case nil:
		case string:
			ts, err := time.Parse(time.RFC3339Nano, v)
			if err != nil || !strings.HasSuffix(v, "Z") || ts.Location() != time.UTC {
				t.Errorf("META-2: %s = %q is not RFC 3339 UTC", k, v)
			}
		default:
			t.Errorf("META-2: %s = %v (%T)", k, v, v)
		}
	}
	for _, k := range []string{"cpu_count", "memory_mb", "disk_size_mb"} {
		if v, ok := m[k].(float64); ok && v == 0 {
			t.Errorf("META-3: %s = 0; an unreported resource must be null", k)
		}
	}
}

func TestListSandboxes(t *testing.T) {
	h := newHarness(t, nil)
	var ids []string
	for range 5 {
		ids = append(ids, h.fp.AddSandbox(fakeprovider.SandboxSeed{Metadata: map[string]string{"owner": "someone"}}))
	}
	paused := h.fp.AddSandbox(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})
	c := h.connect()
	n := h.fp.Journal().Len()

	t.Run("LIST-1 LIST-5 default page", func(t *testing.T) {
		out := c.ok("list_sandboxes", nil)
		items := out["sandboxes"].([]any)
		if len(items) != 6 {
			t.Fatalf("listed %d sandboxes, want 6", len(items))
		}
		for _, it := range items {
			checkMetadata(t, it.(map[string]any))
		}
		if out["limit"] != float64(100) || out["offset"] != float64(0) {
			t.Errorf("limit/offset = %v/%v, want 100/0", out["limit"], out["offset"])
		}
	})
	t.Run("LIST-4 offset paging", func(t *testing.T) {
		seen := map[string]bool{}
		for offset := 0; offset < 6; offset += 2 {
			out := c.ok("list_sandboxes", map[string]any{"limit": 2, "offset": offset})
			if out["limit"] != float64(2) || out["offset"] != float64(offset) {
				t.Errorf("limit/offset echoed as %v/%v", out["limit"], out["offset"])
			}
			for _, it := range out["sandboxes"].([]any) {
				id := it.(map[string]any)["sandbox_id"].(string)
				if seen[id] {
					t.Errorf("%s listed twice", id)
				}
				seen[id] = true
			}
		}
		if len(seen) != 6 {
			t.Errorf("pages covered %d sandboxes, want 6", len(seen))
		}
		out := c.ok("list_sandboxes", map[string]any{"offset": 6})
		if len(out["sandboxes"].([]any)) != 0 {
			t.Error("offset past the end returned sandboxes")
		}
		for _, k := range []string{"total", "next_cursor", "cursor"} {
			if _, ok := out[k]; ok {
				t.Errorf("LIST-4: result promises %s", k)
			}
		}
	})
	t.Run("LIST-3 status filter", func(t *testing.T) {
		out := c.ok("list_sandboxes", map[string]any{"status": "paused"})
		items := out["sandboxes"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["sandbox_id"] != paused {
			t.Errorf("paused filter = %v, want only %s", items, paused)
		}
		out = c.ok("list_sandboxes", map[string]any{"status": "running"})
		if got := len(out["sandboxes"].([]any)); got != 5 {
			t.Errorf("running filter listed %d, want 5", got)
		}
	})
	t.Run("LIST-2 LIST-6 no side effects, real endpoint only", func(t *testing.T) {
		for _, e := range journalFrom(h.fp, n) {
			if e.Op != sandbox.OpListSandboxes {
				t.Errorf("unexpected request %s", e.Op)
			}
			for k := range e.Query {
				if !slices.Contains([]string{"state", "limit", "nextToken", "metadata"}, k) {
					t.Errorf("LIST-6: invented query parameter %q", k)
				}
			}
		}
		if got := snapshotSession(c.session()); got != `default="" owned=[] commands=0 closed=false` {
			t.Errorf("LIST-2: session state %s", got)
		}
		c.close()
		for _, id := range ids {
			if _, ok := h.fp.Sandbox(id); !ok {
				t.Errorf("LIST-2: listed sandbox %s was destroyed at close", id)
			}
		}
	})
}

func TestGetSandbox(t *testing.T) {
	h := newHarness(t, &harnessOptions{config: &sandbox.Config{Providers: []sandbox.ProviderConfig{{
		ID: "other", APIURL: "https://api.other.sandboxkit.test", APIKeyEnv: "OTHER_API_KEY",
	}}}})
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{Omit: []string{"cpuCount", "memoryMB", "diskSizeMB"}})
	c := h.connect()

	t.Run("GET-2 no default", func(t *testing.T) {
		n := h.fp.Journal().Len()
		te := c.fail("get_sandbox", nil)
		if te.Code != codeNoDefault || te.Field != "sandbox_id" {
			t.Errorf("error = %+v", te)
		}
		if got := journalFrom(h.fp, n); len(got) != 0 {
			t.Errorf("GET-2: requests %v", ops(got))
		}
	})
	t.Run("GET-6 external by ID, META-3 nulls", func(t *testing.T) {
		n := h.fp.Journal().Len()
		out := c.ok("get_sandbox", map[string]any{"sandbox_id": ext})
		checkMetadata(t, out)
		if out["sandbox_id"] != ext {
			t.Errorf("sandbox_id = %v", out["sandbox_id"])
		}
		for _, k := range []string{"cpu_count", "memory_mb", "disk_size_mb"} {
			if out[k] != nil {
				t.Errorf("META-3: %s = %v, want null", k, out[k])
			}
		}
		if got := ops(journalFrom(h.fp, n)); !slices.Equal(got, []string{sandbox.OpGetSandbox}) {
			t.Errorf("GET-6: requests %v, want one get", got)
		}
		if got := snapshotSession(c.session()); got != `default="" owned=[] commands=0 closed=false` {
			t.Errorf("GET-6: session state %s", got)
		}
	})
	var own string
	t.Run("GET-1 GET-5 default through the handle", func(t *testing.T) {
		own = c.ok("create_sandbox", nil)["sandbox_id"].(string)
		n := h.fp.Journal().Len()
		out := c.ok("get_sandbox", map[string]any{})
		checkMetadata(t, out)
		if out["sandbox_id"] != own || out["status"] != "running" || out["template"] != "base" {
			t.Errorf("got %v", out)
		}
		got := journalFrom(h.fp, n)
		if !slices.Equal(ops(got), []string{sandbox.OpGetSandbox}) || got[0].SandboxID != own {
			t.Errorf("GET-5: requests %v", ops(got))
		}
	})
	t.Run("GET-3 GET-4 explicit ID keeps the default and extends nothing", func(t *testing.T) {
		before := h.fp.Journal().Len()
		rec, _ := h.fp.Sandbox(ext)
		c.ok("get_sandbox", map[string]any{"sandbox_id": ext})
		c.ok("get_sandbox", map[string]any{"sandbox_id": "e2b:" + ext})
		after, _ := h.fp.Sandbox(ext)
		if !after.EndAt.Equal(rec.EndAt) {
			t.Error("GET-3: end_at moved")
		}
		for _, e := range journalFrom(h.fp, before) {
			if e.Op != sandbox.OpGetSandbox {
				t.Errorf("GET-3: %s", e.Op)
			}
		}
		if d, _ := c.session().defaultSandbox(); d != own {
			t.Errorf("GET-4: default = %q, want %q", d, own)
		}
	})
	t.Run("GET-7 META-5 provider:id", func(t *testing.T) {
		n := h.fp.Journal().Len()
		out := c.ok("get_sandbox", map[string]any{"sandbox_id": "other:" + ext})
		if out["sandbox_id"] != "other:"+ext {
			t.Errorf("META-5: sandbox_id = %v", out["sandbox_id"])
		}
		got := journalFrom(h.fp, n)
		if len(got) != 1 || got[0].Host != "api.other.sandboxkit.test" || got[0].SandboxID != ext {
			t.Errorf("GET-7: routed to %+v", got)
		}
	})
	t.Run("not found", func(t *testing.T) {
		te := c.fail("get_sandbox", map[string]any{"sandbox_id": "doesnotexist"})
		if te.Category != sandbox.NotFound || te.HTTPStatus != http.StatusNotFound {
			t.Errorf("error = %+v", te)
		}
	})
}

func TestCreateSandbox(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect()
	n := h.fp.Journal().Len()
	out := c.ok("create_sandbox", map[string]any{"template": "code-interpreter-v1", "timeout": 600, "envs": map[string]any{"GREETING": "hello"}})
	checkMetadata(t, out)
	id := out["sandbox_id"].(string)
	t.Run("CREATE-6 refreshed metadata", func(t *testing.T) {
		if out["template"] != "code-interpreter-v1" || out["status"] != "running" || out["memory_mb"] != float64(1024) || out["started_at"] == nil || out["end_at"] == nil {
			t.Errorf("metadata %v", out)
		}
		got := ops(journalFrom(h.fp, n))
		if !slices.Equal(got, []string{sandbox.OpCreateSandbox, sandbox.OpGetSandbox}) {
			t.Errorf("requests %v, want create then get", got)
		}
	})
	t.Run("CREATE-1 CREATE-2 body", func(t *testing.T) {
		e := h.fp.Journal().Calls(sandbox.OpCreateSandbox)[0]
		var body map[string]any
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body["timeout"] != float64(600) {
			t.Errorf("timeout sent %v", body["timeout"])
		}
		for _, k := range []string{"cpuCount", "memoryMB"} {
			if _, ok := body[k]; ok {
				t.Errorf("CREATE-2: omitted resource %s was sent", k)
			}
		}
		rec, _ := h.fp.Sandbox(id)
		if rec.EnvVars["GREETING"] != "hello" {
			t.Errorf("envs not passed: %v", rec.EnvVars)
		}
	})
	t.Run("CREATE-5 default and owned with the create timeout as renewal", func(t *testing.T) {
		if got := snapshotSession(c.session()); got != `default="`+id+`" owned=[`+id+`=10m0s] commands=0 closed=false` {
			t.Errorf("session %s", got)
		}
		second := c.ok("create_sandbox", nil)["sandbox_id"].(string)
		if got := snapshotSession(c.session()); got != `default="`+second+`" owned=[`+sortedPair(id+"=10m0s", second+"=5m0s")+`] commands=0 closed=false` {
			t.Errorf("RENEW-1 default policy 300 s: session %s", got)
		}
	})
	t.Run("CREATE-3 backend rejection is categorized", func(t *testing.T) {
		te := c.fail("create_sandbox", map[string]any{"template": "no-such-template"})
		if te.Category != sandbox.NotFound || te.HTTPStatus != http.StatusNotFound {
			t.Errorf("error = %+v", te)
		}
	})
	t.Run("SESSION-1 close destroys both", func(t *testing.T) {
		c.close()
		if h.fp.LiveCount() != 0 {
			t.Errorf("%d sandboxes alive after close", h.fp.LiveCount())
		}
	})
}

func sortedPair(a, b string) string {
	s := []string{a, b}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func TestCreateSandboxResources(t *testing.T) {
	h := newHarness(t, &harnessOptions{
		fake: &fakeprovider.Options{AcceptResources: true},
		config: &sandbox.Config{Providers: []sandbox.ProviderConfig{{
			ID: "sized", APIURL: "https://api.sized.sandboxkit.test", APIKeyEnv: "OTHER_API_KEY", SizedSandboxes: true,
			Regions: map[string]string{"eu": "https://eu.sized.sandboxkit.test"},
		}}},
	})
	c := h.connect()
	out := c.ok("create_sandbox", map[string]any{"provider": "sized", "region": "eu", "cpu": 4, "memory": 2048})
	checkMetadata(t, out)
	if !strings.HasPrefix(out["sandbox_id"].(string), "sized:") || out["region"] != "eu" || out["cpu_count"] != float64(4) || out["memory_mb"] != float64(2048) {
		t.Errorf("metadata %v", out)
	}
	e := h.fp.Journal().Calls(sandbox.OpCreateSandbox)[0]
	if e.Host != "eu.sized.sandboxkit.test" {
		t.Errorf("create routed to %s", e.Host)
	}
	var body map[string]any
	_ = json.Unmarshal(e.Body, &body)
	if body["cpuCount"] != float64(4) || body["memoryMB"] != float64(2048) {
		t.Errorf("resources sent as %v", body)
	}
	// The qualified ID works for the other tools (META-5).
	c.ok("get_sandbox", map[string]any{"sandbox_id": out["sandbox_id"]})
	c.ok("kill_sandbox", nil)
}

func TestSetSandboxTimeout(t *testing.T) {
	h := newHarness(t, nil)
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c := h.connect()

	t.Run("TIMEOUT-2 no default", func(t *testing.T) {
		n := h.fp.Journal().Len()
		te := c.fail("set_sandbox_timeout", map[string]any{"timeout": 60})
		if te.Code != codeNoDefault {
			t.Errorf("error %+v", te)
		}
		if got := journalFrom(h.fp, n); len(got) != 0 || h.fp.LiveCount() != 1 {
			t.Errorf("requests %v, live %d", ops(got), h.fp.LiveCount())
		}
	})
	own := c.ok("create_sandbox", map[string]any{"timeout": 120})["sandbox_id"].(string)
	sess := c.session()
	t.Run("TIMEOUT-3 TIMEOUT-7 owned default", func(t *testing.T) {
		n := h.fp.Journal().Len()
		out := c.ok("set_sandbox_timeout", map[string]any{"timeout": 900})
		if b, _ := json.Marshal(out); string(b) != `{"sandbox_id":"`+own+`","success":true,"timeout":900}` {
			t.Errorf("TIMEOUT-7: %s", b)
		}
		got := journalFrom(h.fp, n)
		if !slices.Equal(ops(got), []string{sandbox.OpSetTimeout}) || string(got[0].Body) != `{"timeout":900}` || got[0].SandboxID != own {
			t.Errorf("requests %v body %s", ops(got), got[0].Body)
		}
		if o, _ := sess.ownedByID(own); o.renewal != 900*time.Second {
			t.Errorf("renewal policy %v, want 900s", o.renewal)
		}
	})
	t.Run("TIMEOUT-4 failure keeps the policy", func(t *testing.T) {
		f := h.fp.InjectFault(fakeprovider.Fault{Op: sandbox.OpSetTimeout, Status: 500, Times: 1})
		defer f.Clear()
		te := c.fail("set_sandbox_timeout", map[string]any{"timeout": 30})
		if te.Category != sandbox.ProviderError || te.HTTPStatus != 500 {
			t.Errorf("error %+v", te)
		}
		if o, _ := sess.ownedByID(own); o.renewal != 900*time.Second {
			t.Errorf("renewal policy %v after failure, want 900s", o.renewal)
		}
	})
	t.Run("TIMEOUT-6 external", func(t *testing.T) {
		n := h.fp.Journal().Len()
		out := c.ok("set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 1000})
		if out["sandbox_id"] != ext || out["timeout"] != float64(1000) {
			t.Errorf("result %v", out)
		}
		got := journalFrom(h.fp, n)
		if !slices.Equal(ops(got), []string{sandbox.OpSetTimeout}) || got[0].SandboxID != ext {
			t.Errorf("TIMEOUT-6: requests %v", ops(got))
		}
		if _, owned := sess.ownedByID(ext); owned {
			t.Error("TIMEOUT-6: external sandbox taken over")
		}
		if o, _ := sess.ownedByID(own); o.renewal != 900*time.Second {
			t.Errorf("TIMEOUT-6: policy changed to %v", o.renewal)
		}
		rec, _ := h.fp.Sandbox(ext)
		if d := rec.EndAt.Sub(h.fp.Now()); d < 990*time.Second || d > 1000*time.Second {
			t.Errorf("external endAt in %v", d)
		}
	})
	t.Run("TIMEOUT-6 close leaves the external sandbox", func(t *testing.T) {
		c.close()
		if _, ok := h.fp.Sandbox(ext); !ok {
			t.Error("external sandbox destroyed at close")
		}
		if _, ok := h.fp.Sandbox(own); ok {
			t.Error("owned sandbox survived close")
		}
	})
}

func TestKillSandbox(t *testing.T) {
	h := newHarness(t, nil)
	ext := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c := h.connect()
	t.Run("no default", func(t *testing.T) {
		n := h.fp.Journal().Len()
		if te := c.fail("kill_sandbox", nil); te.Code != codeNoDefault {
			t.Errorf("error %+v", te)
		}
		if got := journalFrom(h.fp, n); len(got) != 0 {
			t.Errorf("requests %v", ops(got))
		}
	})
	a := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	b := c.ok("create_sandbox", nil)["sandbox_id"].(string)
	t.Run("SESSION-3 default killed and cleared", func(t *testing.T) {
		out := c.ok("kill_sandbox", nil)
		if out["sandbox_id"] != b || out["success"] != true {
			t.Errorf("result %v", out)
		}
		if _, ok := h.fp.Sandbox(b); ok {
			t.Error("default still alive")
		}
		if got := snapshotSession(c.session()); got != `default="" owned=[`+a+`=5m0s] commands=0 closed=false` {
			t.Errorf("session %s", got)
		}
	})
	t.Run("SESSION-3 already gone is not_found", func(t *testing.T) {
		te := c.fail("kill_sandbox", map[string]any{"sandbox_id": b})
		if te.Category != sandbox.NotFound {
			t.Errorf("error %+v", te)
		}
	})
	t.Run("SESSION-3 external via KillByID", func(t *testing.T) {
		n := h.fp.Journal().Len()
		c.ok("kill_sandbox", map[string]any{"sandbox_id": ext})
		got := journalFrom(h.fp, n)
		if !slices.Equal(ops(got), []string{sandbox.OpKillSandbox}) {
			t.Errorf("requests %v", ops(got))
		}
	})
	t.Run("owned killed by ID leaves the destroy set", func(t *testing.T) {
		c.ok("kill_sandbox", map[string]any{"sandbox_id": a})
		n := h.fp.Journal().Len()
		c.close()
		if got := journalFrom(h.fp, n); len(got) != 0 {
			t.Errorf("close made requests %v", ops(got))
		}
	})
}

// TestErrorCategories maps injected platform failures to categories
// (ERR-1, ERR-2) and checks that no provider text leaks (ERR-3).
func TestErrorCategories(t *testing.T) {
	// A failed create starts a create check (LOST-1) that the session's
	// close waits for: a short window keeps the 13 faulted creates from
	// holding the test for the default two minutes (lostcreate_test.go
	// checks the window).
	h := newHarness(t, &harnessOptions{limits: Limits{CreateCheckFor: time.Millisecond}})
	id := h.fp.AddSandbox(fakeprovider.SandboxSeed{})
	c := h.connect()
	for _, tc := range []struct {
		fault    fakeprovider.Fault
		category sandbox.Category
		status   int
		code     string
	}{
		{fakeprovider.Fault{Status: 400}, sandbox.InvalidArgument, 400, ""},
		{fakeprovider.Fault{Status: 401}, sandbox.Unauthenticated, 401, ""},
		{fakeprovider.Fault{Status: 403}, sandbox.PermissionDenied, 403, ""},
		{fakeprovider.Fault{Status: 404}, sandbox.NotFound, 404, ""},
		{fakeprovider.Fault{Status: 409}, sandbox.Conflict, 409, ""},
		{fakeprovider.Fault{Status: 429}, sandbox.RateLimited, 429, ""},
		{fakeprovider.Fault{Status: 500}, sandbox.ProviderError, 500, ""},
		{fakeprovider.Fault{Status: 502}, sandbox.Unavailable, 502, ""},
		{fakeprovider.Fault{Status: 503}, sandbox.Unavailable, 503, ""},
		{fakeprovider.Fault{Status: 504}, sandbox.Timeout, 504, ""},
		{fakeprovider.Fault{Status: 500, Body: `{"code":500,"message":"canary-err-0123 https://api.x/y","error_code":"quota_exceeded"}`}, sandbox.ProviderError, 500, "quota_exceeded"},
		{fakeprovider.Fault{Reset: true}, sandbox.Unavailable, 0, ""},
		{fakeprovider.Fault{Malformed: true}, sandbox.ProviderError, 200, "malformed_response"},
	} {
		name := string(tc.category) + " " + http.StatusText(tc.status)
		t.Run(name, func(t *testing.T) {
			for _, call := range []struct {
				tool string
				op   string
				args map[string]any
			}{
				{"get_sandbox", sandbox.OpGetSandbox, map[string]any{"sandbox_id": id}},
				{"list_sandboxes", sandbox.OpListSandboxes, nil},
				{"set_sandbox_timeout", sandbox.OpSetTimeout, map[string]any{"sandbox_id": id, "timeout": 60}},
				{"create_sandbox", sandbox.OpCreateSandbox, nil},
			} {
				if tc.fault.Malformed && call.op == sandbox.OpSetTimeout {
					continue // a malformed body on a 204 route is still a success
				}
				f := tc.fault
				f.Op = call.op
				fh := h.fp.InjectFault(f)
				res := c.call(call.tool, call.args)
				fh.Clear()
				te := toolErrorOf(t, call.tool, res)
				status := tc.status
				if tc.fault.Malformed && call.op == sandbox.OpCreateSandbox {
					status = http.StatusCreated
				}
				if te.Category != tc.category || te.HTTPStatus != status || te.Code != tc.code {
					t.Errorf("%s: error %+v, want category %s status %d code %q", call.tool, te, tc.category, status, tc.code)
				}
				if text := resultJSON(t, res); strings.Contains(text, "canary") || strings.Contains(text, "api.x") {
					t.Errorf("%s: ERR-3 leak: %s", call.tool, text)
				}
			}
		})
	}
	c.close()
	if h.fp.LiveCount() != 1 {
		t.Errorf("live sandboxes %d, want only the seeded one", h.fp.LiveCount())
	}
}
