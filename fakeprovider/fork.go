package fakeprovider

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// Routes served by this file, journalled under these strings as their
// operations. They are known from infra's spec/openapi.yml and handlers
// (sandbox_fork.go, snapshot_template_create.go, snapshot_template_list.go,
// template_delete.go, sandbox_network_update.go) and the SDKs that call them
// (Python e2b/sandbox_sync/sandbox_api.py, e2b/api/client/api/...).
const (
	RouteForkSandbox    = "POST /sandboxes/{sandboxID}/fork"
	RouteCreateSnapshot = "POST /sandboxes/{sandboxID}/snapshots"
	RouteListSnapshots  = "GET /snapshots"
	RouteDeleteTemplate = "DELETE /templates/{templateID}"
	RouteUpdateNetwork  = "PUT /sandboxes/{sandboxID}/network"
)

// TeamSlug is the namespace of the fake account's snapshot names
// ("<slug>/<name>"), as a team's slug is on the platform.
const TeamSlug = "sandboxkit"

// maxForkCount is infra's cap on one fork request (sandbox_fork.go).
const maxForkCount = 100

// DefaultForkTimeout is SandboxForkRequest.timeout's default (infra
// spec/openapi.yml; the Python SDK always sends its own, 300 s).
const DefaultForkTimeout = 15 * time.Second

// imager is a daemon whose files can be copied: [InMemoryDaemon]'s. A fork
// or a snapshot of a sandbox whose daemon is not one starts empty.
type imager interface {
	Image() *fakeenvd.Image
	Restore(*fakeenvd.Image)
}

// snapshotRecord is a snapshot template: a saved copy of a sandbox that
// creates sandboxes. Guarded by Provider.mu.
type snapshotRecord struct {
	templateID string // the template's own ID
	name       string // alias without namespace; "" when none was given
	sandboxID  string // the sandbox it was taken from
	tmpl       Template
	envVars    map[string]string
	image      *fakeenvd.Image // nil when the daemon has no files to copy
	createdAt  time.Time
	// source is the sandbox as it was, for a fork, which inherits its
	// configuration (infra handlers/sandbox_resume.go
	// buildResumeSandboxDataFromSnapshot: metadata, alias, secure,
	// allowInternetAccess, network, autoPause, autoResume, volumeMounts).
	source sandboxRecord
}

// snapshotID is the snapshot's identifier as the platform reports it:
// "<slug>/<name>:default" when named, else "<templateID>:default".
func (s *snapshotRecord) snapshotID() string {
	if s.name != "" {
		return TeamSlug + "/" + s.name + ":" + defaultTag
	}
	return s.templateID + ":" + defaultTag
}

func (s *snapshotRecord) info() snapshotInfoJSON {
	names := []string{}
	if s.name != "" {
		names = append(names, TeamSlug+"/"+s.name)
	}
	return snapshotInfoJSON{SnapshotID: s.snapshotID(), Names: names}
}

// snapshotInfoJSON is the platform's SnapshotInfo.
type snapshotInfoJSON struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

// forkResultJSON is the platform's SandboxForkResult: exactly one of
// sandbox and error.
type forkResultJSON struct {
	Sandbox any        `json:"sandbox,omitempty"`
	Error   *errorJSON `json:"error,omitempty"`
}

type errorJSON struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// registerForkRoutes adds the fork, snapshot and network routes to mux.
func (p *Provider) registerForkRoutes(mux *http.ServeMux) {
	for route, h := range map[string]http.HandlerFunc{
		RouteForkSandbox:    p.handleFork,
		RouteCreateSnapshot: p.handleCreateSnapshot,
		RouteListSnapshots:  p.handleListSnapshots,
		RouteDeleteTemplate: p.handleDeleteTemplate,
		RouteUpdateNetwork:  p.handleUpdateNetwork,
	} {
		mux.Handle(route, p.controlPlane(route, h))
	}
}

// parseName splits "[namespace/]alias[:tag]" as infra's id.ParseName does,
// with "default" meaning no tag.
func parseName(s string) (namespace, alias, tag string) {
	s, tag, _ = strings.Cut(strings.TrimSpace(s), ":")
	if strings.EqualFold(tag, defaultTag) {
		tag = ""
	}
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[:i], s[i+1:], tag
	}
	return "", s, tag
}

// findSnapshotLocked resolves a create's templateID to a snapshot: its
// snapshotID, its template ID or its name, each with or without ":default"
// and the team's namespace. The caller holds p.mu.
func (p *Provider) findSnapshotLocked(ref string) *snapshotRecord {
	ns, alias, tag := parseName(ref)
	if tag != "" || ns != "" && ns != TeamSlug {
		return nil
	}
	for _, s := range p.snapshots {
		if s.templateID == alias || s.name != "" && s.name == alias {
			return s
		}
	}
	return nil
}

// handleFork serves POST /sandboxes/{sandboxID}/fork (infra
// handlers/sandbox_fork.go): the source keeps running untouched and count
// new sandboxes start from a copy of it (its files, template, metadata and
// environment), each one a result of its own: a sandbox, or an error such
// as the concurrency limit's 429. A killed or unknown source is 404.
func (p *Provider) handleFork(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Timeout *int64 `json:"timeout"`
		Count   *int64 `json:"count"`
	}
	id, ok := p.pathIDBody(w, r, &body)
	if !ok {
		return
	}
	timeout, msg := p.forkTimeout(body.Timeout)
	count := int64(1)
	if body.Count != nil {
		count = *body.Count
	}
	switch {
	case msg != "":
	case count < 1:
		msg = "Count must be at least 1"
	case count > maxForkCount:
		msg = fmt.Sprintf("Count cannot be greater than %d", maxForkCount)
	case count >= int64(p.limit):
		msg = fmt.Sprintf("Count must be lower than the maximum number of concurrent sandboxes (%d)", p.limit)
	}
	if msg != "" {
		p.writeError(w, r, http.StatusBadRequest, msg)
		return
	}
	src, rep := p.forkSource(id)
	if rep.status != 0 {
		p.write(w, r, rep)
		return
	}
	results := make([]forkResultJSON, count)
	for i := range results {
		results[i] = p.startFork(src, timeout)
	}
	p.writeJSON(w, http.StatusCreated, results)
}

// forkTimeout reads a fork's timeout (seconds), as create checks its own.
func (p *Provider) forkTimeout(t *int64) (time.Duration, string) {
	switch {
	case t == nil:
		return DefaultForkTimeout, ""
	case *t <= 0:
		return 0, msgTimeoutNotPositive
	case *t > int64(p.maxTimeout/time.Second):
		return 0, msgTimeoutTooLong(p)
	}
	return time.Duration(*t) * time.Second, ""
}

// forkSource captures what a fork copies from sandbox id: a snapshot
// record (not stored), or the reply that refuses the fork.
func (p *Provider) forkSource(id string) (*snapshotRecord, reply) {
	var src *snapshotRecord
	var daemon Daemon
	rep := p.onVisible(id, func(s *sandboxRecord, now time.Time) (reply, []Daemon) {
		if s.state != StateRunning {
			return reply{status: http.StatusConflict, msg: fmt.Sprintf("Sandbox '%s' cannot be forked while in '%s' state", id, s.state)}, nil
		}
		src, daemon = p.snapshotOfLocked(s, now), s.daemon
		return reply{}, nil
	})
	if src != nil {
		if im, ok := daemon.(imager); ok {
			src.image = im.Image()
		}
	}
	return src, rep
}

// snapshotOfLocked describes sandbox s as a template. The caller holds p.mu.
func (p *Provider) snapshotOfLocked(s *sandboxRecord, now time.Time) *snapshotRecord {
	source := *s
	source.metadata, source.envVars = maps.Clone(s.metadata), maps.Clone(s.envVars)
	source.network, source.volumeMounts = slices.Clone(s.network), slices.Clone(s.volumeMounts)
	source.daemon = nil
	return &snapshotRecord{
		source:     source,
		templateID: s.templateID, sandboxID: s.id, createdAt: now,
		tmpl:    Template{ID: s.templateID, CPUCount: s.cpuCount, MemoryMB: s.memoryMB, DiskSizeMB: s.diskSizeMB, EnvdVersion: s.envdVersion},
		envVars: maps.Clone(s.envVars),
	}
}

// startFork creates one sandbox from src, running for timeout, with the
// source's configuration.
func (p *Provider) startFork(src *snapshotRecord, timeout time.Duration) forkResultJSON {
	s, rep := p.startFromSnapshot(src, timeout)
	if rep.status >= 400 {
		return forkResultJSON{Error: &errorJSON{Code: rep.status, Message: rep.msg}}
	}
	return forkResultJSON{Sandbox: s.sandboxJSON()}
}

// startFromSnapshot creates a running fork of snap's source; it returns
// the record, or the limit's reply when the account is full.
func (p *Provider) startFromSnapshot(snap *snapshotRecord, timeout time.Duration) (*sandboxRecord, reply) {
	src := &snap.source
	s := p.newRecord(newSandboxID(), src.alias, snap.tmpl, src.envdAccessToken != "", src.metadata, snap.envVars)
	s.allowInternetAccess, s.autoPause, s.autoResume = src.allowInternetAccess, src.autoPause, src.autoResume
	s.network, s.volumeMounts = slices.Clone(src.network), slices.Clone(src.volumeMounts)
	s.state = StateRunning
	s.daemon = p.startDaemon(s)
	if im, ok := s.daemon.(imager); ok && snap.image != nil {
		im.Restore(snap.image)
	}
	return s, p.admit(s, timeout)
}

// handleCreateSnapshot serves POST /sandboxes/{sandboxID}/snapshots
// (infra handlers/snapshot_template_create.go): a copy of the running
// sandbox becomes a template that creates sandboxes (POST /sandboxes with
// its snapshotID, template ID or name). A name already taken by one of the
// account's snapshots is reused (its copy replaced). 201 SnapshotInfo.
func (p *Provider) handleCreateSnapshot(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var body struct {
		Name *string `json:"name"`
	}
	if err := decodeOptionalJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	var name string
	if body.Name != nil {
		ns, alias, tag := parseName(*body.Name)
		switch {
		case alias == "":
			p.writeError(w, r, http.StatusBadRequest, "Invalid name: template ID cannot be empty")
			return
		case ns != "" && ns != TeamSlug:
			p.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("namespace '%s' must match your team '%s'", ns, TeamSlug))
			return
		case tag != "":
			p.writeError(w, r, http.StatusBadRequest, "Invalid name: the fake keeps one tag per snapshot, \"default\"")
			return
		}
		name = alias
	}
	snap, rep := p.forkSource(id)
	if rep.status != 0 {
		if rep.status == http.StatusConflict {
			rep.msg = strings.Replace(rep.msg, "forked", "snapshotted", 1)
		}
		p.write(w, r, rep)
		return
	}
	snap.name = name
	p.update(func(time.Time) []Daemon {
		if old := p.findSnapshotLocked(name); name != "" && old != nil {
			snap.templateID = old.templateID
		} else {
			snap.templateID = newTemplateID()
		}
		snap.tmpl.ID = snap.templateID
		p.snapshots[snap.templateID] = snap
		return nil
	})
	p.writeJSON(w, http.StatusCreated, snap.info())
}

// newTemplateID returns a template ID in the platform's form (20 [a-z0-9]).
func newTemplateID() string { return randomID(20) }

// handleListSnapshots serves GET /snapshots?sandboxID&name&limit&nextToken
// (infra handlers/snapshot_template_list.go): the account's snapshots,
// newest first, 100 a page by default and at most, X-Next-Token when more
// remain.
func (p *Provider) handleListSnapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			p.validationError(w, r, fmt.Sprintf(`parameter "limit" in query has an error: %s is not between 1 and 100`, v))
			return
		}
		limit = n
	}
	offset := 0
	if v := q.Get("nextToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			p.writeError(w, r, http.StatusBadRequest, "Invalid next token")
			return
		}
		offset = n
	}
	_, wantName, _ := parseName(q.Get("name"))
	var all []*snapshotRecord
	p.update(func(time.Time) []Daemon {
		for _, s := range p.snapshots {
			if (q.Get("sandboxID") == "" || s.sandboxID == q.Get("sandboxID")) && (wantName == "" || s.name == wantName || s.templateID == wantName) {
				all = append(all, s)
			}
		}
		return nil
	})
	slices.SortFunc(all, func(a, b *snapshotRecord) int {
		if c := b.createdAt.Compare(a.createdAt); c != 0 {
			return c
		}
		return strings.Compare(a.templateID, b.templateID)
	})
	page := all[min(offset, len(all)):min(offset+limit, len(all))]
	if offset+limit < len(all) {
		w.Header().Set("X-Next-Token", strconv.Itoa(offset+limit))
	}
	out := make([]snapshotInfoJSON, 0, len(page))
	for _, s := range page {
		out = append(out, s.info())
	}
	p.writeJSON(w, http.StatusOK, out)
}

// handleDeleteTemplate serves DELETE /templates/{templateID} for the
// account's snapshots (the SDKs' deleteSnapshot): 204; 404 "template '<x>'
// not found" for one that does not exist (the SDKs then return false); 400
// while a running sandbox uses it (infra handlers/template_delete.go); 403
// for E2B's public templates, which the account does not own.
func (p *Provider) handleDeleteTemplate(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("templateID")
	var rep reply
	p.update(func(time.Time) []Daemon {
		snap := p.findSnapshotLocked(ref)
		if snap == nil {
			if _, t, ok := p.lookupTemplate(ref); ok && !t.Owned {
				rep = reply{status: http.StatusForbidden, msg: fmt.Sprintf("you don't have access to template '%s'", ref)}
			} else {
				rep = reply{status: http.StatusNotFound, msg: fmt.Sprintf("template '%s' not found", ref)}
			}
			return nil
		}
		for _, s := range p.sandboxes {
			if s.templateID == snap.templateID && s.state == StateRunning {
				rep = reply{status: http.StatusBadRequest, msg: fmt.Sprintf("cannot delete template '%s' because there are running sandboxes using it", snap.templateID)}
				return nil
			}
		}
		delete(p.snapshots, snap.templateID)
		rep = reply{status: http.StatusNoContent}
		return nil
	})
	p.write(w, r, rep)
}

// networkUpdateJSON is the platform's SandboxNetworkUpdateConfig.
type networkUpdateJSON struct {
	AllowOut            []string        `json:"allowOut"`
	DenyOut             []string        `json:"denyOut"`
	Rules               json.RawMessage `json:"rules"`
	AllowInternetAccess *bool           `json:"allowInternetAccess"`
}

// handleUpdateNetwork serves PUT /sandboxes/{sandboxID}/network (infra
// handlers/sandbox_network_update.go): the egress rules (allowOut,
// denyOut, rules) are replaced as a whole, fields left out are cleared,
// and get reports them as the sandbox's network; allowInternetAccess is
// changed when sent. 204. The rules are stored, not applied (the fake has
// no network).
func (p *Provider) handleUpdateNetwork(w http.ResponseWriter, r *http.Request) {
	var body networkUpdateJSON
	id, ok := p.pathIDBody(w, r, &body)
	if !ok {
		return
	}
	p.write(w, r, p.onVisible(id, func(s *sandboxRecord, _ time.Time) (reply, []Daemon) {
		s.network = mergeNetwork(s.network, body)
		if body.AllowInternetAccess != nil {
			v := *body.AllowInternetAccess
			s.allowInternetAccess = &v
		}
		return reply{status: http.StatusNoContent}, nil
	}))
}

// mergeNetwork replaces the egress fields of a stored network config and
// keeps the others (allowPublicTraffic, maskRequestHost).
func mergeNetwork(stored json.RawMessage, u networkUpdateJSON) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(stored, &m) // stored was checked to be an object at create
	delete(m, "allowOut")
	delete(m, "denyOut")
	delete(m, "rules")
	put := func(key string, v any) {
		if b, err := json.Marshal(v); err == nil {
			m[key] = b
		}
	}
	if len(u.AllowOut) > 0 {
		put("allowOut", u.AllowOut)
	}
	if len(u.DenyOut) > 0 {
		put("denyOut", u.DenyOut)
	}
	if len(u.Rules) > 0 && string(u.Rules) != "null" {
		m["rules"] = u.Rules
	}
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}
