package fakeprovider_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

func TestProvider_Journal(t *testing.T) {
	f := newFixture(t, nil)
	sb := f.create(map[string]any{"templateID": "base", "metadata": map[string]string{"k": "v"}})
	id := sb["sandboxID"].(string)
	f.clock.Advance(time.Second)
	f.do("GET", "/sandboxes/"+id+"?verbose=1", nil)
	f.do("POST", "/sandboxes/"+id+"/timeout", map[string]any{"timeout": 30})
	f.do("GET", "/v2/sandboxes?state=running&limit=5", nil)
	f.doWith("GET", "/v2/sandboxes", nil, nil) // 401
	f.do("GET", "/sandboxes/BAD", nil)
	f.do("GET", "/elsewhere", nil)

	j := f.p.Journal()
	entries := j.Entries()
	if len(entries) != 7 || j.Len() != 7 {
		t.Fatalf("%d entries, want 7", len(entries))
	}
	wantOps := []string{sandbox.OpCreateSandbox, sandbox.OpGetSandbox, sandbox.OpSetTimeout, sandbox.OpListSandboxes, ""}
	if got := j.Ops(); !slices.Equal(got, wantOps) {
		t.Errorf("Ops() = %q, want %q", got, wantOps)
	}
	create := entries[0]
	if create.Method != "POST" || create.Path != "/sandboxes" || create.Status != 201 || !create.Time.Equal(t0) ||
		!strings.Contains(string(create.Body), `"metadata":{"k":"v"}`) || create.BodyTruncated || create.SandboxID != "" ||
		create.Header.Get("X-Api-Key") != f.p.APIKey() || create.Host != "api.sandboxkit.test" || create.Envd {
		t.Errorf("create entry %+v", create)
	}
	get := entries[1]
	if get.SandboxID != id || get.Status != 200 || get.Query.Get("verbose") != "1" || !get.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("get entry %+v", get)
	}
	if e := entries[2]; string(e.Body) != `{"timeout":30}` || e.Status != 204 {
		t.Errorf("timeout entry body %q status %d", e.Body, e.Status)
	}
	if e := entries[3]; e.Query.Get("state") != "running" || e.Query.Get("limit") != "5" {
		t.Errorf("list query %v", e.Query)
	}
	if e := entries[4]; e.Status != 401 || e.Op != sandbox.OpListSandboxes {
		t.Errorf("unauthorised list entry %+v", e)
	}
	if e := entries[5]; e.Status != 400 || e.SandboxID != "BAD" {
		t.Errorf("bad-ID entry %+v", e)
	}
	if e := entries[6]; e.Op != "" || e.Status != 404 {
		t.Errorf("unknown route entry %+v", e)
	}
	if j.Count(sandbox.OpListSandboxes) != 2 || len(j.Calls(sandbox.OpGetSandbox)) != 2 {
		t.Errorf("Count/Calls: %d %d", j.Count(sandbox.OpListSandboxes), len(j.Calls(sandbox.OpGetSandbox)))
	}
	if got := j.ForSandbox(id); len(got) != 2 {
		t.Errorf("ForSandbox: %d entries", len(got))
	}

	// Entries are copies.
	entries[0].Body[0] = 'X'
	entries[0].Header.Set("X-Api-Key", "changed")
	if e := j.Entries()[0]; e.Body[0] == 'X' || e.Header.Get("X-Api-Key") == "changed" {
		t.Error("Entries() shares memory with the journal")
	}

	big := `{"templateID":"base","metadata":{"pad":"` + strings.Repeat("x", fakeprovider.MaxJournalBody) + `"}}`
	if res := f.do("POST", "/sandboxes", big); res.status != http.StatusCreated {
		t.Fatalf("big create: %d %s", res.status, res.body)
	}
	if e := j.Entries()[7]; len(e.Body) != fakeprovider.MaxJournalBody || !e.BodyTruncated {
		t.Errorf("big body journaled as %d bytes, truncated=%v", len(e.Body), e.BodyTruncated)
	}
	// A request rejected before its body is read still has it journaled.
	f.doWith("POST", "/sandboxes", `{"templateID":"base"}`, nil)
	if e := j.Entries()[8]; e.Status != 401 || string(e.Body) != `{"templateID":"base"}` {
		t.Errorf("401 create entry: status %d body %q", e.Status, e.Body)
	}

	// Since copies the entries from the n-th on, and refuses an n past
	// the end (the journal was reset after n was read).
	if tail, ok := j.Since(7); !ok || len(tail) != 2 || tail[1].Status != 401 {
		t.Errorf("Since(7) = %d entries, %v; want the last 2", len(tail), ok)
	} else if tail[0].Body[0] = 'X'; j.Entries()[7].Body[0] == 'X' {
		t.Error("Since shares memory with the journal")
	}
	if tail, ok := j.Since(9); !ok || len(tail) != 0 {
		t.Errorf("Since(Len()) = %d entries, %v; want none, true", len(tail), ok)
	}

	j.Reset()
	if j.Len() != 0 || len(j.Ops()) != 0 {
		t.Error("Reset left entries")
	}
	if _, ok := j.Since(1); ok {
		t.Error("Since(1) of an empty journal reports entries")
	}
}

func TestProvider_RouteTableCoverage(t *testing.T) {
	// Every control-plane route answers something other than the unknown-route
	// 404 and is journaled under its own name.
	f := newFixture(t, nil)
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	for _, op := range sandbox.ControlPlaneOps() {
		method, path, _ := strings.Cut(op, " ")
		path = strings.ReplaceAll(path, "{sandboxID}", id)
		f.do(method, path, map[string]any{"timeout": 10, "templateID": "base"})
	}
	if got := f.p.Journal().Ops(); !slices.Equal(got, sandbox.ControlPlaneOps()) {
		t.Errorf("journaled ops %q, want %q", got, sandbox.ControlPlaneOps())
	}
}
