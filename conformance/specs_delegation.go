package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The delegation family checks which platform requests each lifecycle tool
// makes, read from the fake provider's journal: the real endpoints of the
// route table, with the platform's own parameters, and nothing else.

// lcUnknownProvider is a provider prefix no server configures.
const lcUnknownProvider = "nosuchprovider"

// lcDefaultProvider is the ID of the default provider in the reference SDK.
const lcDefaultProvider = "e2b"

func delegationSpecs() []Spec {
	return []Spec{
		{ID: "delegation.list-delegates", Rules: []string{"LIST-1", "LIST-2", "LIST-5", "LIST-6", "SDK-1"}, Tools: []string{"list_sandboxes"}, Body: specListDelegates,
			Title: "list_sandboxes calls only GET /v2/sandboxes with the platform's own query parameters and returns every visible sandbox with the default limit and offset"},
		{ID: "delegation.list-status-filter", Rules: []string{"LIST-1", "LIST-6"}, Tools: []string{"list_sandboxes"}, Body: specListStatusFilter,
			Title: "list_sandboxes passes status to the platform as its state parameter and returns only sandboxes in that state"},
		{ID: "delegation.list-offset-walks-cursor", Rules: []string{"LIST-4", "LIST-5", "LIST-6", "SDK-1"}, Tools: []string{"list_sandboxes"}, Body: specListOffsetWalksCursor,
			Title: "list_sandboxes honours an offset beyond the first platform page by walking X-Next-Token, asking for at most 100 per request, and returns the platform's page with no total and no cursor"},
		{ID: "delegation.get-external", Rules: []string{"GET-1", "GET-3", "GET-6", "SDK-1", "SDK-3"}, Tools: []string{"get_sandbox"}, Body: specGetExternal,
			Title: "get_sandbox on an external ID makes exactly one GET /sandboxes/{id}: no connect, no daemon call, no lifetime change, and the sandbox is not destroyed at close"},
		{ID: "delegation.get-owned-refreshes", Rules: []string{"GET-1", "GET-3", "GET-5", "SDK-1"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specGetOwnedRefreshes,
			Title: "get_sandbox on an owned sandbox refreshes it with one GET /sandboxes/{id} and reports the platform's latest metadata without extending its lifetime"},
		{ID: "delegation.set-timeout-owned", Rules: []string{"TIMEOUT-3", "SDK-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout"}, Body: specSetTimeoutOwned,
			Title: `set_sandbox_timeout on an owned sandbox makes one POST /sandboxes/{id}/timeout with {"timeout": N}`},
		{ID: "delegation.set-timeout-external", Rules: []string{"TIMEOUT-6", "SDK-1", "SDK-3"}, Tools: []string{"set_sandbox_timeout"}, Body: specSetTimeoutExternal,
			Title: "set_sandbox_timeout on an external ID makes one POST /sandboxes/{id}/timeout and nothing else: no connect, no daemon call, and the sandbox is not destroyed at close"},
		{ID: "delegation.kill-external", Rules: []string{"SESSION-3", "SDK-1", "SDK-3"}, Tools: []string{"kill_sandbox"}, Body: specKillExternal,
			Title: "kill_sandbox on an external ID makes one DELETE /sandboxes/{id} without connecting, and a second kill is a not_found tool error"},
		{ID: "delegation.unknown-provider-prefix", Rules: []string{"GET-7", "SDK-2"}, Tools: []string{"get_sandbox", "set_sandbox_timeout", "kill_sandbox"}, Body: specUnknownProviderPrefix,
			Title: "a provider:id naming a provider that is not configured is an invalid_argument tool error and no platform request"},
		{ID: "delegation.qualified-default-id", Rules: []string{"GET-7", "SDK-2", "META-5"}, Tools: []string{"get_sandbox", "set_sandbox_timeout", "kill_sandbox"}, Body: specQualifiedDefaultID,
			Title: `"e2b:<id>" routes get, set-timeout and kill to the default provider and results give the ID back bare`},
		{ID: "delegation.route-table-only", Rules: []string{"SDK-1", "LIST-6"}, Tools: []string{"create_sandbox", "list_sandboxes", "get_sandbox", "set_sandbox_timeout", "kill_sandbox", "run_command"}, Body: specRouteTableOnly,
			Title: "every platform request the lifecycle tools make, through a whole session, is a route of the platform's route table with no invented query parameter"},
		// A process of its own: the in-process server's HTTP client is
		// the kit's, which hides a by-ID call that uses a pooled one.
		{ID: "delegation.by-id-releases-connections", Rules: []string{"GET-6", "TIMEOUT-6"}, Tools: []string{"get_sandbox", "set_sandbox_timeout"}, Process: true, Body: specByIDReleasesConnections,
			Title: "get_sandbox and set_sandbox_timeout on an external ID leave no connection to the provider open after they return"},
		{ID: "delegation.create-omits-resources", Rules: []string{"CREATE-2"}, Tools: []string{"create_sandbox"}, Body: specCreateOmitsResources,
			Title: "create_sandbox without cpu or memory sends neither cpuCount nor memoryMB to the platform"},
		{ID: "delegation.create-no-team", Rules: []string{"CREATE-4"}, Tools: []string{"create_sandbox"}, Body: specCreateNoTeam,
			Title: "create_sandbox defines no team argument and rejects one with an invalid_argument error before any request"},
	}
}

// listedIDs returns the sandbox IDs of a list_sandboxes result, in order.
func listedIDs(r *Result) []string {
	ginkgo.GinkgoHelper()
	items, ok := r.Structured["sandboxes"].([]any)
	gomega.Expect(ok).To(gomega.BeTrue(), "list_sandboxes: sandboxes is not an array")
	ids := make([]string, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		id, _ := m["sandbox_id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// expectListResult asserts the LIST-5 shape with the given limit and offset.
func expectListResult(r *Result, limit, offset int) {
	ginkgo.GinkgoHelper()
	gomega.Expect(keysOf(r.Structured)).To(gomega.ConsistOf("sandboxes", "limit", "offset"),
		"list_sandboxes: the result must be exactly {sandboxes, limit, offset}: no total, no cursor")
	gomega.Expect(r.Structured["limit"]).To(gomega.BeNumerically("==", limit), "list_sandboxes: limit")
	gomega.Expect(r.Structured["offset"]).To(gomega.BeNumerically("==", offset), "list_sandboxes: offset")
}

// ExpectListRequests asserts that entries are only list requests, each
// with the platform's own parameters and a limit of at most 100; it returns them.
func (entries journal) ExpectListRequests() journal {
	ginkgo.GinkgoHelper()
	gomega.Expect(entries).NotTo(gomega.BeEmpty(), "list_sandboxes made no platform request")
	for i, e := range entries {
		gomega.Expect(e.Op).To(gomega.Equal(sandbox.OpListSandboxes), "list_sandboxes: request %d is not GET /v2/sandboxes", i)
		gomega.Expect(e.Envd).To(gomega.BeFalse())
		for k := range e.Query {
			gomega.Expect(lcListParams).To(gomega.ContainElement(k),
				"list_sandboxes: query parameter %q is not one the platform defines", k)
		}
		if v := e.Query.Get("limit"); v != "" || e.Query.Has("limit") {
			n, err := strconv.Atoi(v)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "list_sandboxes: limit %q is not an integer", v)
			gomega.Expect(n).To(gomega.BeNumerically(">=", 1), "list_sandboxes: platform limit")
			gomega.Expect(n).To(gomega.BeNumerically("<=", sandbox.MaxListLimit), "list_sandboxes: a request asks for more than 100")
		}
	}
	return entries
}

// platformOrder returns the live sandboxes in the platform's list order
// (newest first).
func (tc *TestContext) platformOrder() []string {
	recs := tc.Fake.LiveSandboxes() // oldest first
	ids := make([]string, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		ids = append(ids, recs[i].ID)
	}
	return ids
}

func specListDelegates(ctx context.Context, tc *TestContext) {
	var seeded []string
	for range 3 {
		seeded = append(seeded, tc.seedExternal())
	}
	seeded = append(seeded, tc.Seed(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused}))
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()

	r := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{}))
	expectListResult(r, 100, 0)
	gomega.Expect(listedIDs(r)).To(gomega.ConsistOf(seeded), "list_sandboxes returns every running and paused sandbox of the account")
	tc.journal().ExpectListRequests()
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(len(seeded)), "list_sandboxes created or destroyed a sandbox")
}

func specListStatusFilter(ctx context.Context, tc *TestContext) {
	running := []string{tc.seedExternal(), tc.seedExternal()}
	paused := []string{tc.Seed(fakeprovider.SandboxSeed{State: fakeprovider.StatePaused})}
	s := tc.Connect(ctx)
	for _, c := range []struct {
		status string
		want   []string
	}{{"paused", paused}, {"running", running}} {
		tc.Fake.Journal().Reset()
		r := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"status": c.status}))
		expectListResult(r, 100, 0)
		gomega.Expect(listedIDs(r)).To(gomega.ConsistOf(c.want), "list_sandboxes {status: %s}", c.status)
		for _, e := range tc.journal().ExpectListRequests() {
			gomega.Expect(e.Query.Get("state")).To(gomega.Equal(c.status), "status %s must reach the platform as state=%s", c.status, c.status)
		}
	}
}

func specListOffsetWalksCursor(ctx context.Context, tc *TestContext) {
	const total = 175
	now := tc.Clock.Now()
	for i := range total {
		tc.Seed(fakeprovider.SandboxSeed{StartedAt: now.Add(-time.Duration(i) * time.Second)})
	}
	order := tc.platformOrder()
	gomega.Expect(order).To(gomega.HaveLen(total))
	s := tc.Connect(ctx)

	tc.Fake.Journal().Reset()
	r := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"offset": 150, "limit": 20}))
	expectListResult(r, 20, 150)
	gomega.Expect(listedIDs(r)).To(gomega.Equal(order[150:170]), "list_sandboxes {offset: 150, limit: 20}: the platform's sandboxes 150 to 169")
	reqs := tc.journal().ExpectListRequests()
	gomega.Expect(len(reqs)).To(gomega.BeNumerically(">=", 2),
		"offset 150 lies beyond the platform's first page of at most 100: the server must walk the cursor")
	gomega.Expect(reqs[0].Query.Has("nextToken")).To(gomega.BeFalse(), "the first request carries no cursor")
	for i, e := range reqs[1:] {
		gomega.Expect(e.Query.Get("nextToken")).NotTo(gomega.BeEmpty(), "list request %d must carry the previous X-Next-Token", i+2)
	}

	// A larger offset gives the next page (LIST-4).
	r = tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"offset": 170, "limit": 20}))
	expectListResult(r, 20, 170)
	gomega.Expect(listedIDs(r)).To(gomega.Equal(order[170:]), "list_sandboxes {offset: 170, limit: 20}: the last page")
	r = tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"limit": 20}))
	expectListResult(r, 20, 0)
	gomega.Expect(listedIDs(r)).To(gomega.Equal(order[:20]), "list_sandboxes {limit: 20}: the first page")
	tc.journal().ExpectListRequests()
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(total), "list_sandboxes created or destroyed a sandbox")
}

func specGetExternal(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	before, _ := tc.Fake.Sandbox(ext)
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()

	r := s.mustGet(ctx, ext)
	got := r.String("sandbox_id")
	gomega.Expect(fakeprovider.SameSandbox(got, ext)).To(gomega.BeTrue(), "get_sandbox returned sandbox %q, not %q, the one asked for", got, ext)
	// META-5: the same sandbox, named as e2b 1.x names it (<id>-<clientID>),
	// is not the bare ID a caller passes back.
	gomega.Expect(got).To(gomega.Equal(ext), "META-5: get_sandbox names the sandbox asked for with a client suffix, not as its bare ID")
	gomega.Expect(r.String("status")).To(gomega.Equal("running"))
	entries := tc.journal()
	entries.ExpectOps("get_sandbox on an external ID", sandbox.OpGetSandbox)
	gomega.Expect(entries[0].SandboxID).To(gomega.Equal(ext))
	entries.ExpectNoEnvd(tc, "get_sandbox", ext)
	tc.expectEndAt(ext, before.EndAt, "get_sandbox must not extend a lifetime")

	tc.closeSession(ctx, s)
	tc.expectUntouched(ext, "get_sandbox must not add an external sandbox to the destroy set")
}

func specGetOwnedRefreshes(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	id := s.mustCreate(ctx, nil)
	// The platform's record changes behind the server's back: only a real
	// refresh sees it.
	endAt := tc.Clock.Now().Add(777 * time.Second).UTC()
	tc.Fake.SetEndAt(id, endAt)
	tc.movedEnd(endAt)
	for _, arg := range []string{id, ""} {
		tc.Fake.Journal().Reset()
		r := s.mustGet(ctx, arg)
		gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(id))
		got, err := time.Parse(time.RFC3339Nano, r.String("end_at"))
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "get_sandbox: end_at is not RFC 3339")
		gomega.Expect(got).To(gomega.BeTemporally("==", endAt), "get_sandbox must report the platform's latest end time")
		entries := tc.journal()
		entries.ExpectOps("get_sandbox on an owned sandbox", sandbox.OpGetSandbox)
		gomega.Expect(fakeprovider.SameSandbox(entries[0].SandboxID, id)).To(gomega.BeTrue(), "the provider request named %s, not %s", entries[0].SandboxID, id)
		tc.expectEndAt(id, endAt, "get_sandbox must not extend a lifetime")
	}
}

func specSetTimeoutOwned(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	id := s.mustCreate(ctx, nil)
	tc.Clock.Advance(30 * time.Second)
	tc.Fake.Journal().Reset()

	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": id, "timeout": 600}))
	entries := tc.journal().WithoutHandleReads(tc, id)
	entries.ExpectOps("set_sandbox_timeout on an owned sandbox", sandbox.OpSetTimeout)
	gomega.Expect(fakeprovider.SameSandbox(entries[0].SandboxID, id)).To(gomega.BeTrue(), "the provider request named %s, not %s", entries[0].SandboxID, id)
	gomega.Expect(timeoutBody(entries[0])).To(gomega.BeEquivalentTo(600))
	tc.expectEndAt(id, tc.Clock.Now().Add(600*time.Second), "set_sandbox_timeout 600")
}

func specSetTimeoutExternal(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	tc.Clock.Advance(30 * time.Second)
	tc.Fake.Journal().Reset()

	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 900}))
	entries := tc.journal()
	entries.ExpectOps("set_sandbox_timeout on an external ID", sandbox.OpSetTimeout)
	gomega.Expect(entries[0].SandboxID).To(gomega.Equal(ext))
	gomega.Expect(timeoutBody(entries[0])).To(gomega.BeEquivalentTo(900))
	entries.ExpectNoEnvd(tc, "set_sandbox_timeout", ext)
	tc.expectEndAt(ext, tc.Clock.Now().Add(900*time.Second), "set_sandbox_timeout 900")

	tc.closeSession(ctx, s)
	tc.expectUntouched(ext, "set_sandbox_timeout must not take an external sandbox over")
	tc.journalFor(ext).Control().ExpectOps("requests for the external sandbox", sandbox.OpSetTimeout)
}

func specKillExternal(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()

	r := tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": ext}))
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(ext))
	entries := tc.journal()
	entries.ExpectOps("kill_sandbox on an external ID", sandbox.OpKillSandbox)
	gomega.Expect(entries[0].SandboxID).To(gomega.Equal(ext))
	entries.ExpectNoEnvd(tc, "kill_sandbox")
	gomega.Expect(tc.live(ext)).To(gomega.BeFalse(), "kill_sandbox did not destroy the sandbox")

	tc.Fake.Journal().Reset()
	tc.ExpectToolError(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": ext}), "not_found")
	entries = tc.journal()
	gomega.Expect(entries.Ops()).NotTo(gomega.ContainElement(sandbox.OpConnectSandbox), "a kill must not connect")
	entries.ExpectNoEnvd(tc, "kill_sandbox of a gone sandbox")
}

func specUnknownProviderPrefix(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	q := lcUnknownProvider + ":" + ext
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_sandbox", map[string]any{"sandbox_id": q}},
		{"set_sandbox_timeout", map[string]any{"sandbox_id": q, "timeout": 60}},
		{"kill_sandbox", map[string]any{"sandbox_id": q}},
	} {
		tc.ExpectToolError(s.Call(ctx, c.tool, c.args), "invalid_argument")
		tc.ExpectNoRequests(c.tool + " with an unknown provider prefix")
	}
	tc.expectUntouched(ext, "an unknown provider prefix")
}

func specQualifiedDefaultID(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	q := lcDefaultProvider + ":" + ext

	r := s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": q})
	if r.Err == nil && r.IsError && r.Category() == "invalid_argument" && tc.Fake.Journal().Len() == 0 {
		ginkgo.Skip(`the server rejects "e2b:<id>": its default provider is not named e2b or it does not accept the ` +
			"qualified default form; with the kit's single fake provider, routing to another provider cannot be checked")
	}
	tc.ExpectSuccess(r)
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(ext), "the default provider's IDs come back bare")
	tc.journal().ExpectOps("get_sandbox e2b:<id>", sandbox.OpGetSandbox)
	gomega.Expect(tc.journal()[0].SandboxID).To(gomega.Equal(ext))

	tc.Fake.Journal().Reset()
	r = tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": q, "timeout": 600}))
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(ext), "the default provider's IDs come back bare")
	entries := tc.journal()
	entries.ExpectOps("set_sandbox_timeout e2b:<id>", sandbox.OpSetTimeout)
	gomega.Expect(entries[0].SandboxID).To(gomega.Equal(ext))
	gomega.Expect(timeoutBody(entries[0])).To(gomega.BeEquivalentTo(600))

	tc.Fake.Journal().Reset()
	r = tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": q}))
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(ext), "the default provider's IDs come back bare")
	tc.journal().ExpectOps("kill_sandbox e2b:<id>", sandbox.OpKillSandbox)
	gomega.Expect(tc.live(ext)).To(gomega.BeFalse(), "kill_sandbox e2b:<id> did not destroy the sandbox")
}

func specRouteTableOnly(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	killable := tc.seedExternal()
	s := tc.Connect(ctx)
	id := s.mustCreate(ctx, map[string]any{"timeout": 600})
	tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"status": "running", "limit": 5}))
	s.mustGet(ctx, id)
	s.mustGet(ctx, "")
	s.mustGet(ctx, ext)
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": id, "timeout": 700}))
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 800}))
	s.mustRun(ctx, "")
	s.mustRun(ctx, ext)
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": killable}))
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{}))
	tc.closeSession(ctx, s, id)

	entries := tc.journal()
	gomega.Expect(entries).NotTo(gomega.BeEmpty())
	for _, e := range entries {
		gomega.Expect(knownOp(e.Op)).To(gomega.BeTrue(), "the server called %s %s, which is not in the platform's route table", e.Method, e.Path)
		if e.Envd {
			continue
		}
		if e.Op == sandbox.OpListSandboxes {
			journal{e}.ExpectListRequests()
			continue
		}
		gomega.Expect(e.Query).To(gomega.BeEmpty(), "%s: the platform defines no query parameter here", e.Op)
	}
	ops := tc.Fake.Journal().Ops()
	for _, op := range []string{sandbox.OpCreateSandbox, sandbox.OpListSandboxes, sandbox.OpGetSandbox, sandbox.OpSetTimeout,
		sandbox.OpConnectSandbox, sandbox.OpKillSandbox} {
		gomega.Expect(ops).To(gomega.ContainElement(op), "the session should have used %s", op)
	}
}

func specByIDReleasesConnections(ctx context.Context, tc *TestContext) {
	ext := tc.seedExternal()
	s := tc.Connect(ctx)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_sandbox", map[string]any{"sandbox_id": ext}},
		{"set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 600}},
		{"get_sandbox", map[string]any{"sandbox_id": ext}},
	} {
		// Connections left idle by earlier specs may close meanwhile; none
		// may be added.
		baseline := tc.OpenConnections()
		tc.ExpectSuccess(s.Call(ctx, c.tool, c.args))
		tc.expectConnectionsReleased(ctx, baseline, c.tool+" on an external ID")
	}
}

func specCreateOmitsResources(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	for _, args := range []map[string]any{{}, {"timeout": 120}, {"envs": map[string]any{"A": "b"}}} {
		tc.Fake.Journal().Reset()
		s.mustCreate(ctx, args)
		creates := tc.Fake.Journal().Calls(sandbox.OpCreateSandbox)
		gomega.Expect(creates).To(gomega.HaveLen(1), "create_sandbox %s makes one POST /sandboxes", argsText(args))
		var body map[string]json.RawMessage
		gomega.Expect(json.Unmarshal(creates[0].Body, &body)).To(gomega.Succeed(), "the create body is not a JSON object")
		for _, k := range []string{"cpuCount", "memoryMB"} {
			gomega.Expect(body).NotTo(gomega.HaveKey(k), "create_sandbox %s sent %s although the caller gave no resources", argsText(args), k)
		}
	}
}

func specCreateNoTeam(ctx context.Context, tc *TestContext) {
	props, _ := advertisedProps(tc, "create_sandbox")
	for k := range props {
		gomega.Expect(slices.Contains([]string{"team", "team_id", "teamid", "teamID"}, k)).To(gomega.BeFalse(),
			"create_sandbox defines a team argument %q", k)
	}
	s := tc.Connect(ctx)
	tc.Fake.Journal().Reset()
	tc.ExpectInvalidField(s.Call(ctx, "create_sandbox", map[string]any{"team": "lcteam0451"}), "team", "lcteam0451")
	tc.ExpectNoRequests("create_sandbox with a team argument")
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.BeZero(), "create_sandbox with a team argument created a sandbox")
}

// lcCommand is a command every server runs quickly and successfully.
const lcCommand = "echo ok"

// lcGrace is how long the journal must stay still before a spec concludes
// that the server has stopped calling the provider.
const lcGrace = 200 * time.Millisecond

// seedExternal plants one running external sandbox.
func (tc *TestContext) seedExternal() string {
	return tc.Seed(fakeprovider.SandboxSeed{})
}

// mustRun runs lcCommand with run_command, on sandboxID or (when "") on the
// session's default, and expects a success.
func (s *Session) mustRun(ctx context.Context, sandboxID string) *Result {
	ginkgo.GinkgoHelper()
	tc := s.tc
	args := map[string]any{"command": lcCommand}
	if sandboxID != "" {
		args["sandbox_id"] = sandboxID
	}
	return tc.ExpectSuccess(s.Call(ctx, "run_command", args))
}

// mustGet calls get_sandbox (on the default when id is "") and expects a
// success naming the sandbox.
func (s *Session) mustGet(ctx context.Context, id string) *Result {
	ginkgo.GinkgoHelper()
	tc := s.tc
	args := map[string]any{}
	if id != "" {
		args["sandbox_id"] = id
	}
	return tc.ExpectSuccess(s.Call(ctx, "get_sandbox", args))
}

// Ops lists the operations of entries, in order.
func (entries journal) Ops() []string {
	ops := make([]string, 0, len(entries))
	for _, e := range entries {
		op := e.Op
		if op == "" {
			op = "<unknown route> " + e.Method + " " + e.Path
		}
		ops = append(ops, op)
	}
	return ops
}

// Control keeps the control-plane entries.
func (entries journal) Control() journal {
	var out []fakeprovider.Entry
	for _, e := range entries {
		if !e.Envd {
			out = append(out, e)
		}
	}
	return out
}

// WithOp keeps the entries of one operation.
func (entries journal) WithOp(op string) journal {
	var out []fakeprovider.Entry
	for _, e := range entries {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// ExpectOps asserts that entries are exactly the operations want, in order.
// WithoutHandleReads drops, in a modern run, the reads of sandbox id's
// metadata: a 2026-07-28 request carries no session, so a server (or the
// replica a request reaches) may read the sandbox's metadata to find its
// lease and principal before acting on it (HANDLE-1, LEASE-4). In a legacy
// run it returns entries unchanged.
func (entries journal) WithoutHandleReads(tc *TestContext, id string) journal {
	if tc.Era() != EraModern {
		return entries
	}
	var kept journal
	for _, e := range entries {
		if e.Op == sandbox.OpGetSandbox && fakeprovider.SameSandbox(e.SandboxID, id) {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

func (entries journal) ExpectOps(what string, want ...string) {
	ginkgo.GinkgoHelper()
	if want == nil {
		want = []string{}
	}
	gomega.Expect(entries.Ops()).To(gomega.Equal(want), "%s: the provider requests made", what)
}

// ExpectNoEnvd asserts that no entry reached a sandbox's daemon (SDK-3)
// nor used a sandbox's domain as its host.
func (entries journal) ExpectNoEnvd(tc *TestContext, what string, ids ...string) {
	ginkgo.GinkgoHelper()
	for _, e := range entries {
		gomega.Expect(e.Envd).To(gomega.BeFalse(), "%s: the server called the sandbox's daemon (%s)", what, e.Op)
		for _, id := range ids {
			if dom, ok := tc.Fake.Domain(id); ok && dom != "" {
				gomega.Expect(strings.Contains(strings.ToLower(e.Host), strings.ToLower(dom))).To(gomega.BeFalse(),
					"%s: a lifecycle call was routed through the sandbox domain, not the API URL (%s)", what, e.Op)
			}
		}
	}
}

// timeoutBody returns N of a {"timeout": N} request body, and fails the
// spec when the body is anything else.
func timeoutBody(e fakeprovider.Entry) int64 {
	ginkgo.GinkgoHelper()
	var body map[string]any
	gomega.Expect(json.Unmarshal(e.Body, &body)).To(gomega.Succeed(), "%s: the body is not a JSON object: %q", e.Op, truncate(string(e.Body), 200))
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	gomega.Expect(keys).To(gomega.ConsistOf("timeout"), `%s: the body must be exactly {"timeout": N}`, e.Op)
	n, ok := body["timeout"].(float64)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: timeout is not a number", e.Op)
	gomega.Expect(n).To(gomega.Equal(float64(int64(n))), "%s: timeout is not whole seconds", e.Op)
	return int64(n)
}

// Renewals returns N of every OpSetTimeout for id in entries, in order.
func (entries journal) Renewals(id string) []int64 {
	ginkgo.GinkgoHelper()
	var out []int64
	for _, e := range entries {
		if e.Op == sandbox.OpSetTimeout && fakeprovider.SameSandbox(e.SandboxID, id) {
			out = append(out, timeoutBody(e))
		}
	}
	return out
}

// expectEndAt asserts that the provider's endAt of id is want, to the second.
func (tc *TestContext) expectEndAt(id string, want time.Time, why string) {
	ginkgo.GinkgoHelper()
	rec, ok := tc.Fake.Sandbox(id)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: sandbox %s is gone", why, id)
	gomega.Expect(rec.EndAt).To(gomega.BeTemporally("~", want, time.Second), "%s: the sandbox's end time", why)
}

// live reports whether the provider still has sandbox id.
func (tc *TestContext) live(id string) bool {
	_, ok := tc.Fake.Sandbox(id)
	return ok
}

// waitGone waits, within the settle timeout, until none of ids is live.
func (tc *TestContext) waitGone(ctx context.Context, why string, ids ...string) {
	ginkgo.GinkgoHelper()
	gone := tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		for _, id := range ids {
			if tc.live(id) {
				return false
			}
		}
		return true
	})
	if !gone {
		var left []string
		for _, id := range ids {
			if tc.live(id) {
				left = append(left, id)
			}
		}
		var reqs []string
		for _, id := range left {
			for _, e := range tc.journalFor(id) {
				if !e.Envd {
					reqs = append(reqs, fmt.Sprintf("%s %s -> %d", e.Op, id, e.Status))
				}
			}
		}
		ginkgo.Fail(fmt.Sprintf("%s: sandboxes %s still exist %s later; their control-plane requests: %s",
			why, strings.Join(left, ", "), tc.Config.SettleTimeout, strings.Join(reqs, "; ")))
	}
}

// settle waits until the journal has stayed unchanged for lcGrace plus two
// of the spec's typical no-op round trips (at most the settle timeout), so
// that a late call would have arrived however busy the machine.
func (tc *TestContext) settle(ctx context.Context) {
	quiet := tc.allowQuiet(ctx, lcGrace, 2)
	last := tc.Fake.Journal().Len()
	still := time.Now()
	tc.WaitFor(ctx, tc.Config.SettleTimeout, func() bool {
		n := tc.Fake.Journal().Len()
		if n != last {
			last, still = n, time.Now()
			return false
		}
		return time.Since(still) >= quiet
	})
}

// closeSession closes a session (for HTTP this sends DELETE) and waits until
// the provider no longer has the sandboxes it owned and the server has
// stopped calling the provider.
func (tc *TestContext) closeSession(ctx context.Context, s *Session, owned ...string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(s.Close(ctx)).To(gomega.Succeed(), "close the session")
	tc.waitGone(ctx, "after the session closed", owned...)
	tc.settle(ctx)
}

// kills counts the OpKillSandbox requests for id.
func (tc *TestContext) kills(id string) int {
	return len(tc.journalFor(id).WithOp(sandbox.OpKillSandbox))
}

// expectUntouched asserts that an external sandbox survived a
// session's close and that the server never renewed or killed it.
func (tc *TestContext) expectUntouched(id, why string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(tc.live(id)).To(gomega.BeTrue(), "%s: sandbox %s was destroyed", why, id)
	gomega.Expect(tc.kills(id)).To(gomega.BeZero(), "%s: the server killed sandbox %s", why, id)
}

// knownOp reports whether op is in the route table (control plane or envd).
func knownOp(op string) bool {
	return contains(sandbox.ControlPlaneOps(), op) || contains(sandbox.EnvdOps(), op)
}

// lcListParams are the query parameters of the platform's list endpoint
// that LIST-6 allows.
var lcListParams = []string{"state", "limit", "nextToken", "metadata"}

// expectConnectionsReleased asserts, for a server in another process,
// that the connections to the provider fall back to at most baseline soon
// after a by-ID call (GET-6, TIMEOUT-6).
func (tc *TestContext) expectConnectionsReleased(ctx context.Context, baseline int, what string) {
	ginkgo.GinkgoHelper()
	ok := tc.WaitFor(ctx, 2*time.Second, func() bool { return tc.OpenConnections() <= baseline })
	gomega.Expect(ok).To(gomega.BeTrue(), "%s left %d connection(s) to the provider open (%d before the call)",
		what, tc.OpenConnections(), baseline)
}

// keysOf returns the keys of a JSON object.
func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
