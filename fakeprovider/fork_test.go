package fakeprovider_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// daemonsByID records the in-memory daemons a Provider builds.
type daemonsByID struct {
	mu   sync.Mutex
	byID map[string]*fakeenvd.Daemon
}

func (ds *daemonsByID) new(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
	d := fakeprovider.InMemoryDaemon(c).(*fakeenvd.Daemon)
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.byID == nil {
		ds.byID = map[string]*fakeenvd.Daemon{}
	}
	ds.byID[c.SandboxID] = d
	return d
}

func (ds *daemonsByID) read(t *testing.T, id, path string) string {
	t.Helper()
	ds.mu.Lock()
	d := ds.byID[id]
	ds.mu.Unlock()
	b, err := d.FS().ReadFile(path)
	if err != nil {
		t.Fatalf("%s:%s: %v", id, path, err)
	}
	return string(b)
}

// TestFork checks POST /sandboxes/{id}/fork against infra's
// handlers/sandbox_fork.go: count copies of the running sandbox, each a
// result of its own; the source untouched; a killed source is 404.
func TestFork(t *testing.T) {
	ds := &daemonsByID{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new, SandboxLimit: 4})
	src := f.create(map[string]any{"templateID": "base", "timeout": 300, "metadata": map[string]string{"k": "v"}, "envVars": map[string]string{"E": "1"}})
	f.create(map[string]any{"templateID": "base", "timeout": 300})
	id := src["sandboxID"].(string)
	ds.mu.Lock()
	_ = ds.byID[id].FS().WriteFile("/home/user/state.txt", []byte("before fork"), 0o644)
	ds.mu.Unlock()
	res := f.do("POST", "/sandboxes/"+id+"/fork", map[string]any{"timeout": 60, "count": 3})
	if res.status != http.StatusCreated {
		t.Fatalf("fork: %d %s", res.status, res.body)
	}
	results := decodeList(t, res.body)
	if len(results) != 3 {
		t.Fatalf("results %v", results)
	}
	// Limit 4: the source, another sandbox and two forks fit; the third
	// fork gets the limit's 429.
	var forks []string
	for _, r := range results[:2] {
		sbx, ok := r["sandbox"].(map[string]any)
		if !ok || r["error"] != nil {
			t.Fatalf("result %v", r)
		}
		fid := sbx["sandboxID"].(string)
		forks = append(forks, fid)
		if got := ds.read(t, fid, "/home/user/state.txt"); got != "before fork" {
			t.Errorf("fork %s has %q", fid, got)
		}
		info := decodeObject(t, f.do("GET", "/sandboxes/"+fid, nil).body)
		if md, _ := info["metadata"].(map[string]any); info["templateID"] != src["templateID"] || info["state"] != "running" || md["k"] != "v" {
			t.Errorf("fork info %v", info)
		}
	}
	if e, ok := results[2]["error"].(map[string]any); !ok || e["code"] != float64(429) {
		t.Errorf("third fork %v, want a 429 error", results[2])
	}
	if forks[0] == forks[1] || forks[0] == id {
		t.Errorf("fork IDs %v of %s", forks, id)
	}
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/fork", map[string]any{"count": 0}), 400, "Count must be at least 1")
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/fork", map[string]any{"count": 4}), 400, "Count must be lower than the maximum number of concurrent sandboxes (4)")
	if res := f.do("DELETE", "/sandboxes/"+id, nil); res.status != http.StatusNoContent {
		t.Fatalf("kill: %d", res.status)
	}
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/fork", nil), 404, `Sandbox "`+id+`" doesn't exist`)
}

// TestSnapshots checks create, list, create-from and delete of snapshots
// against infra's snapshot_template_create.go, snapshot_template_list.go
// and template_delete.go.
func TestSnapshots(t *testing.T) {
	ds := &daemonsByID{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: ds.new})
	id := f.create(map[string]any{"templateID": "base", "timeout": 300})["sandboxID"].(string)
	ds.mu.Lock()
	_ = ds.byID[id].FS().WriteFile("/home/user/s.txt", []byte("saved"), 0o644)
	ds.mu.Unlock()
	res := f.do("POST", "/sandboxes/"+id+"/snapshots", map[string]any{"name": "my-snap"})
	if res.status != http.StatusCreated {
		t.Fatalf("snapshot: %d %s", res.status, res.body)
	}
	named := decodeObject(t, res.body)
	if named["snapshotID"] != fakeprovider.TeamSlug+"/my-snap:default" {
		t.Errorf("named snapshot %v", named)
	}
	anon := decodeObject(t, f.do("POST", "/sandboxes/"+id+"/snapshots", nil).body)
	if names := anon["names"].([]any); len(names) != 0 {
		t.Errorf("unnamed snapshot %v", anon)
	}
	if l := decodeList(t, f.do("GET", "/snapshots?sandboxID="+id, nil).body); len(l) != 2 {
		t.Errorf("list %v", l)
	}
	if l := decodeList(t, f.do("GET", "/snapshots?limit=1", nil).body); len(l) != 1 {
		t.Errorf("limit 1: %v", l)
	}
	for _, ref := range []string{named["snapshotID"].(string), "my-snap", anon["snapshotID"].(string)} {
		s := f.create(map[string]any{"templateID": ref, "timeout": 60})
		if got := ds.read(t, s["sandboxID"].(string), "/home/user/s.txt"); got != "saved" {
			t.Errorf("from %s: %q", ref, got)
		}
		f.do("DELETE", "/sandboxes/"+s["sandboxID"].(string), nil)
	}
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/snapshots", map[string]any{"name": "other-team/x"}), 400, "namespace 'other-team' must match your team")
	// "team/name:tag" is two path segments: no route, 404, as on the
	// platform (the SDKs put the ID in the path unescaped).
	wantError(t, f.p, f.do("DELETE", "/templates/"+named["snapshotID"].(string), nil), 404, "Not Found")
	for _, ref := range []string{"my-snap", anon["snapshotID"].(string)} {
		if res := f.do("DELETE", "/templates/"+ref, nil); res.status != http.StatusNoContent {
			t.Fatalf("delete %s: %d %s", ref, res.status, res.body)
		}
		wantError(t, f.p, f.do("DELETE", "/templates/"+ref, nil), 404, "template '"+ref+"' not found")
	}
	wantError(t, f.p, f.do("DELETE", "/templates/base", nil), 403, "you don't have access to template 'base'")
	wantError(t, f.p, f.do("POST", "/sandboxes", map[string]any{"templateID": "my-snap"}), 404, "template 'my-snap' not found")
	f.do("DELETE", "/sandboxes/"+id, nil)
	wantError(t, f.p, f.do("POST", "/sandboxes/"+id+"/snapshots", nil), 404, `Sandbox "`+id+`" doesn't exist`)
}

// TestUpdateNetwork checks PUT /sandboxes/{id}/network against infra's
// sandbox_network_update.go: the egress rules are replaced as a whole and
// reported by get.
func TestUpdateNetwork(t *testing.T) {
	f := newFixture(t, nil)
	id := f.create(map[string]any{"templateID": "base", "network": map[string]any{"allowPublicTraffic": false, "denyOut": []string{"0.0.0.0/0"}}})["sandboxID"].(string)
	if res := f.do("PUT", "/sandboxes/"+id+"/network", map[string]any{"allowOut": []string{"example.com"}, "allowInternetAccess": false}); res.status != http.StatusNoContent {
		t.Fatalf("update: %d %s", res.status, res.body)
	}
	info := decodeObject(t, f.do("GET", "/sandboxes/"+id, nil).body)
	net, _ := info["network"].(map[string]any)
	if net == nil || net["denyOut"] != nil || net["allowPublicTraffic"] != false || len(net["allowOut"].([]any)) != 1 || info["allowInternetAccess"] != false {
		t.Errorf("after update: network %v allowInternetAccess %v", info["network"], info["allowInternetAccess"])
	}
	wantError(t, f.p, f.do("PUT", "/sandboxes/inope/network", map[string]any{}), 404, `Sandbox "inope" doesn't exist`)
}
