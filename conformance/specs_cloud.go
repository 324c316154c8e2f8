package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Tolerances of the cloud-only specs.
const (
	// cloudEndTolerance is how far a sandbox's end time may stray from
	// what the kit expects, beyond the duration of the calls involved,
	// when both sides are read from the provider's clock (an end time
	// moved by set_sandbox_timeout relative to the previous one, a
	// lifetime end_at - started_at, two reads of one sandbox).
	cloudEndTolerance = 5 * time.Second
	// cloudClockSkew is how far the provider's clock may stray from the
	// kit's when an end time is compared with the kit's own now + timeout:
	// the skew by which the sweep leaves alone a sandbox older than the run.
	cloudClockSkew = cloudstate.ClockSkew
)

// cloudSpecs cross-check the server against the real platform through the
// kit's own SDK. They run only in cloud mode; the last one scans every
// result of the run for the secrets the platform issued.
func cloudSpecs() []Spec {
	return []Spec{
		{ID: "cloud.create-matches-platform", Rules: []string{"CREATE-6", "META-1", "META-2", "META-3", "GET-1", "VERIFY-1"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specCreateMatchesPlatform,
			Title: "create_sandbox and get_sandbox report the metadata the platform has for the new sandbox, with the requested lifetime"},
		{ID: "cloud.set-timeout-moves-end", Rules: []string{"TIMEOUT-1", "TIMEOUT-2", "TIMEOUT-3", "TIMEOUT-7", "VERIFY-1"}, Tools: []string{"create_sandbox", "set_sandbox_timeout"}, Body: specSetTimeoutMovesEnd,
			Title: fmt.Sprintf("set_sandbox_timeout moves the sandbox's end time on the platform to now + timeout (within %s of the previous move, %s of the kit's clock)", cloudEndTolerance, cloudClockSkew)},
		{ID: "cloud.close-destroys-owned-spares-external", Rules: []string{"SESSION-1", "CREATE-5", "GET-6", "VERIFY-1"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specCloseDestroysOwnedSparesExternal,
			Title: "closing a session destroys the sandbox it created on the platform and leaves an external sandbox it read running and unrenewed"},
		{ID: "cloud.close-destroys-implicit", Rules: []string{"SESSION-1", "SESSION-2", "VERIFY-1"}, Tools: []string{"run_command", "get_sandbox"}, Body: specCloseDestroysImplicit,
			Title: "closing a session destroys the default sandbox a data-plane tool created implicitly on the platform"},
		{ID: "cloud.list-shows-created", Rules: []string{"LIST-1", "LIST-5", "META-1", "VERIFY-1"}, Tools: []string{"create_sandbox", "list_sandboxes"}, Body: specListShowsCreated,
			Title: "list_sandboxes pages through the account and shows a sandbox the session created with the platform's metadata"},
		{ID: "cloud.tokens-absent-from-results", Rules: []string{"META-4", "CREATE-6", "VERIFY-1"}, Tools: []string{"create_sandbox", "get_sandbox", "list_sandboxes", "set_sandbox_timeout"}, Body: specTokensAbsentFromResults,
			Title: "no tool result of the run and no line of the server's log holds a token, domain, client ID or key the platform issued"},
	}
}

// cloudModeOnly skips a cloud spec outside cloud mode; the family's
// registration runs it ahead of every body.
func cloudModeOnly(_ context.Context, tc *TestContext) {
	if tc.run.cloud == nil {
		ginkgo.Skip("cloud-only: runs only in cloud mode")
	}
}

func specCreateMatchesPlatform(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	const lifetime = 300
	r := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{"timeout": lifetime}))
	id := r.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "create_sandbox: no sandbox_id")
	in := cloudMustExist(ctx, tc, id, "the sandbox create_sandbox reported")
	cloudExpectMeta(tc, "create_sandbox", r.Structured, in)
	gomega.Expect(in.StartedAt).NotTo(gomega.BeNil(), "the platform reports no start time")
	gomega.Expect(in.EndAt).NotTo(gomega.BeNil(), "the platform reports no end time")
	gomega.Expect(in.EndAt.Sub(*in.StartedAt)).To(gomega.BeNumerically("~", lifetime*time.Second, cloudEndTolerance),
		"create_sandbox {timeout: %d}: the platform's lifetime end_at - started_at", lifetime)

	g := tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": id}))
	cloudExpectMeta(tc, "get_sandbox", g.Structured, cloudMustExist(ctx, tc, id, "the sandbox get_sandbox read"))
	d := tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{}))
	gomega.Expect(d.String("sandbox_id")).To(gomega.Equal(id), "get_sandbox without sandbox_id reads the default: the created sandbox")
}

func specSetTimeoutMovesEnd(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	r := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{"timeout": 300}))
	id := r.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "create_sandbox: no sandbox_id")
	steps := []struct {
		explicit bool
		timeout  int
	}{{true, 900}, {true, 420}, {false, 600}}
	var prevEnd, prevMid time.Time
	var prevTimeout int
	var prevDur time.Duration
	for i, st := range steps {
		args := map[string]any{"timeout": st.timeout}
		if st.explicit {
			args["sandbox_id"] = id
		}
		before := time.Now()
		res := s.Call(ctx, "set_sandbox_timeout", args)
		after := time.Now()
		tc.ExpectSuccess(res)
		gomega.Expect(res.Structured).To(gomega.Equal(map[string]any{"success": true, "sandbox_id": id, "timeout": float64(st.timeout)}),
			"set_sandbox_timeout %s: the result (TIMEOUT-7)", argsText(args))
		in := cloudMustExist(ctx, tc, id, "the sandbox whose timeout was set")
		gomega.Expect(in.EndAt).NotTo(gomega.BeNil(), "the platform reports no end time")
		end := *in.EndAt
		n := time.Duration(st.timeout) * time.Second
		gomega.Expect(end).To(gomega.BeTemporally(">=", before.Add(n-cloudClockSkew)),
			"set_sandbox_timeout %s: the platform's end time is far before the kit's now + %d s", argsText(args), st.timeout)
		gomega.Expect(end).To(gomega.BeTemporally("<=", after.Add(n+cloudClockSkew)),
			"set_sandbox_timeout %s: the platform's end time is far after the kit's now + %d s", argsText(args), st.timeout)
		mid := before.Add(after.Sub(before) / 2)
		if i > 0 {
			want := prevEnd.Add(mid.Sub(prevMid)).Add(time.Duration(st.timeout-prevTimeout) * time.Second)
			tol := cloudEndTolerance + after.Sub(before) + prevDur
			gomega.Expect(end).To(gomega.BeTemporally("~", want, tol),
				"set_sandbox_timeout from %d s to %d s must move the end time by the difference plus the time between the calls (within %s)",
				prevTimeout, st.timeout, tol)
		}
		prevEnd, prevMid, prevTimeout, prevDur = end, mid, st.timeout, after.Sub(before)
	}
}

func specCloseDestroysOwnedSparesExternal(ctx context.Context, tc *TestContext) {
	ext := tc.CreateExternal(ctx, 10*time.Minute)
	extBefore := cloudMustExist(ctx, tc, ext, "the external sandbox the kit created")
	s := tc.Connect(ctx)
	r := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{}))
	owned := r.String("sandbox_id")
	gomega.Expect(owned).NotTo(gomega.BeEmpty(), "create_sandbox: no sandbox_id")
	cloudMustExist(ctx, tc, owned, "the sandbox create_sandbox reported")
	g := tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": ext}))
	gomega.Expect(g.String("sandbox_id")).To(gomega.Equal(ext), "get_sandbox of the external sandbox")

	_ = s.Close(ctx)
	gomega.Expect(cloudWaitGone(ctx, tc, owned, tc.settleTime())).To(gomega.BeTrue(),
		"the sandbox the session created (%s) still exists on the platform %s after the session closed", owned, tc.settleTime())
	extAfter, ok := cloudInfo(ctx, tc, ext)
	gomega.Expect(ok).To(gomega.BeTrue(), "the external sandbox %s was destroyed when the session closed", ext)
	gomega.Expect(extAfter.Status).To(gomega.Equal(extBefore.Status), "the external sandbox's state changed")
	if extBefore.EndAt != nil && extAfter.EndAt != nil {
		gomega.Expect(*extAfter.EndAt).To(gomega.BeTemporally("~", *extBefore.EndAt, cloudEndTolerance),
			"the external sandbox's end time moved: the session renewed a sandbox it does not own")
	}
}

func specCloseDestroysImplicit(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	out := tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "echo sandboxkit"}))
	gomega.Expect(out.Structured["stdout"]).To(gomega.Equal("sandboxkit\n"), "run_command in the implicitly created sandbox")
	g := tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{}))
	id := g.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "get_sandbox without sandbox_id after an implicit creation: no sandbox_id")
	cloudExpectMeta(tc, "get_sandbox", g.Structured, cloudMustExist(ctx, tc, id, "the implicitly created default sandbox"))
	_ = s.Close(ctx)
	gomega.Expect(cloudWaitGone(ctx, tc, id, tc.settleTime())).To(gomega.BeTrue(),
		"the sandbox run_command created (%s) still exists on the platform %s after the session closed", id, tc.settleTime())
}

func specListShowsCreated(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	r := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{}))
	id := r.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "create_sandbox: no sandbox_id")
	in := cloudMustExist(ctx, tc, id, "the sandbox create_sandbox reported")
	const limit, maxPages = 100, 20
	deadline := time.Now().Add(20 * time.Second) // listings may lag behind creation
	for {
		for page := 0; page < maxPages; page++ {
			res := tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"limit": limit, "offset": page * limit}))
			gomega.Expect(res.Structured["limit"]).To(gomega.Equal(float64(limit)), "list_sandboxes: limit (LIST-5)")
			gomega.Expect(res.Structured["offset"]).To(gomega.Equal(float64(page*limit)), "list_sandboxes: offset (LIST-5)")
			items, _ := res.Structured["sandboxes"].([]any)
			for _, it := range items {
				m, _ := it.(map[string]any)
				if m["sandbox_id"] == id {
					cloudExpectMeta(tc, "list_sandboxes item", m, in)
					return
				}
			}
			if len(items) < limit {
				break
			}
		}
		if time.Now().After(deadline) {
			ginkgo.Fail(fmt.Sprintf("list_sandboxes never showed %s, a running sandbox of the account", id))
		}
		time.Sleep(time.Second)
	}
}

func specTokensAbsentFromResults(ctx context.Context, tc *TestContext) {
	c := tc.run.cloud
	s := tc.Connect(ctx)
	r := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{}))
	id := r.String("sandbox_id")
	gomega.Expect(id).NotTo(gomega.BeEmpty(), "create_sandbox: no sandbox_id")
	cloudMustExist(ctx, tc, id, "the sandbox create_sandbox reported") // the SDK sees its tokens
	tc.ExpectSuccess(s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": id}))
	tc.ExpectSuccess(s.Call(ctx, "list_sandboxes", map[string]any{"limit": 10}))
	tc.ExpectSuccess(s.Call(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": id, "timeout": 300}))
	tc.ExpectToolError(s.Call(ctx, "get_sandbox", map[string]any{"sandbox_id": "sbxkitnotthere0000000000"}), "not_found")

	counts := c.secrets.count()
	var kinds []string
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(kinds)
	ginkgo.AddReportEntry("secrets scanned for", strings.Join(kinds, ", "))
	gomega.Expect(counts["API key"]).To(gomega.BeNumerically(">=", 1), "the scan must at least know the API key")

	transcripts := tc.run.allTranscripts()
	transcripts[tc.specID] = tc.Transcript()
	specs := make([]string, 0, len(transcripts))
	for spec := range transcripts {
		specs = append(specs, spec)
	}
	sort.Strings(specs)
	var leaks []string
	calls := 0
	for _, spec := range specs {
		for i, ex := range transcripts[spec] {
			calls++
			if kind, found := c.secrets.find(ex.Result); found {
				leaks = append(leaks, fmt.Sprintf("%s call #%d (%s) holds the %s", spec, i+1, ex.Tool, kind))
			}
		}
	}
	if kind, found := c.secrets.find(tc.Logs()); found {
		leaks = append(leaks, "the server's log holds the "+kind)
	}
	ginkgo.AddReportEntry("results scanned", fmt.Sprintf("%d calls of %d specs, and the server's log", calls, len(specs)))
	gomega.Expect(leaks).To(gomega.BeEmpty(), "results hold secrets the platform issued (META-4)")
}

// cloudInfo reads a sandbox through the kit's SDK; ok is false when the
// platform says it does not exist. Other failures fail the spec.
func cloudInfo(ctx context.Context, tc *TestContext, id string) (*sandbox.Info, bool) {
	ginkgo.GinkgoHelper()
	in, ok, err := tc.run.cloud.info(ctx, id)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "read %s through the kit's SDK", id)
	return in, ok
}

func cloudMustExist(ctx context.Context, tc *TestContext, id, what string) *sandbox.Info {
	ginkgo.GinkgoHelper()
	in, ok := cloudInfo(ctx, tc, id)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s (%s) does not exist on the platform", what, id)
	return in
}

// cloudWaitGone polls the platform until the sandbox is gone or limit
// passes.
func cloudWaitGone(ctx context.Context, tc *TestContext, id string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if _, ok, err := tc.run.cloud.info(ctx, id); err == nil && !ok {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// metaKeys are the keys of sandbox metadata (META-1).
var metaKeys = []string{"sandbox_id", "template", "status", "region", "started_at", "end_at", "cpu_count", "memory_mb", "disk_size_mb"}

// cloudExpectMeta compares metadata a tool reported with what the
// platform told the kit's SDK.
func cloudExpectMeta(tc *TestContext, what string, got map[string]any, in *sandbox.Info) {
	ginkgo.GinkgoHelper()
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	gomega.Expect(keys).To(gomega.ConsistOf(metaKeys), "%s: metadata keys (META-1)", what)
	gomega.Expect(got["sandbox_id"]).To(gomega.Equal(in.SandboxID), "%s: sandbox_id", what)
	tmpl, _ := got["template"].(string)
	gomega.Expect(tc.run.cloud.templateMatches(in.SandboxID, tmpl, in)).To(gomega.BeTrue(),
		"%s: template %q is neither the platform's template ID nor its alias (%q)", what, tmpl, in.Template)
	gomega.Expect(got["status"]).To(gomega.Equal(string(in.Status)), "%s: status", what)
	if reg := got["region"]; reg != nil {
		_, isString := reg.(string)
		gomega.Expect(isString).To(gomega.BeTrue(), "%s: region must be a string or null", what)
	}
	cloudExpectTime(what+": started_at", got["started_at"], in.StartedAt, time.Second)
	cloudExpectTime(what+": end_at", got["end_at"], in.EndAt, cloudEndTolerance)
	for key, want := range map[string]*int{"cpu_count": in.CPUCount, "memory_mb": in.MemoryMB, "disk_size_mb": in.DiskSizeMB} {
		if want == nil {
			gomega.Expect(got[key]).To(gomega.BeNil(), "%s: %s: the platform did not report it, so it must be null (META-3)", what, key)
			continue
		}
		gomega.Expect(got[key]).To(gomega.Equal(float64(*want)), "%s: %s", what, key)
	}
}

// cloudExpectTime checks an RFC 3339 UTC time (META-2) against the
// platform's, within tol.
func cloudExpectTime(what string, got any, want *time.Time, tol time.Duration) {
	ginkgo.GinkgoHelper()
	if want == nil {
		gomega.Expect(got).To(gomega.BeNil(), "%s: the platform did not report it, so it must be null", what)
		return
	}
	s, ok := got.(string)
	gomega.Expect(ok).To(gomega.BeTrue(), "%s: want an RFC 3339 string, got %v", what, got)
	t, err := time.Parse(time.RFC3339Nano, s)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: %q is not RFC 3339 (META-2)", what, s)
	gomega.Expect(strings.HasSuffix(s, "Z")).To(gomega.BeTrue(), "%s: %q is not in UTC (META-2)", what, s)
	gomega.Expect(t).To(gomega.BeTemporally("~", *want, tol), "%s: the platform says %s", what, want.UTC().Format(time.RFC3339))
}
