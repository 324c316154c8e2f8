package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The errors family injects every fault kind of the fake on the platform
// call each tool makes and checks the tool error that comes back (ERR-1,
// ERR-2, ERR-3): a tool error, never a JSON-RPC error; the category the
// status maps to; http_status equal to the injected status; a non-empty
// static recovery hint identical for the same category across tools; no raw
// provider message, URL or stack trace; and a session that still works (the
// same call succeeds once the fault is cleared).

// errsFault is one fault kind of the matrix.
type errsFault struct {
	name      string
	status    int // injected HTTP status, 0 for none
	reset     bool
	malformed bool
	category  string // the category the fault must map to
}

// errsStatusCategory is the contract's mapping of injected statuses (ERR-4).
var errsStatusCategory = []struct {
	status   int
	category string
}{
	{400, "invalid_argument"}, {401, "unauthenticated"}, {403, "permission_denied"}, {404, "not_found"},
	{409, "conflict"}, {429, "rate_limited"}, {500, "provider_error"}, {502, "unavailable"},
	{503, "unavailable"}, {504, "timeout"},
}

func errorSpecs() []Spec {
	specs := []Spec{}
	for _, f := range errsFaults() {
		var title string
		switch {
		case f.status != 0:
			title = fmt.Sprintf("turns an HTTP %d on every tool's platform call (lifecycle calls, create, connect) into a tool error of category %s with http_status %d, the category's static hint, no raw message, and a usable session",
				f.status, f.category, f.status)
		case f.reset:
			title = "turns a connection reset on every tool's platform call into an unavailable tool error without http_status, no raw message, and a usable session"
		default:
			title = "turns a malformed success body on every tool's platform call into a provider_error tool error (or a success where the call has no body), no raw body, and a usable session"
		}
		specs = append(specs, Spec{ID: "errors." + f.name, Rules: []string{"ERR-1", "ERR-2", "ERR-3", "ERR-4"}, Body: errsMatrix(errsPlatformModes, []errsFault{f}),
			Title: title})
	}
	specs = append(specs,
		Spec{ID: "errors.envd-files", Rules: []string{"ERR-1", "ERR-2", "ERR-3", "ERR-4"}, Body: errsMatrix(errsEnvdFileModes, errsFaults()),
			Title: "maps every status, reset and malformed answer of the daemon's file routes (read, write, upload, download, run_code's upload) to the status's category with its http_status and static hint, and the session stays usable"},
		Spec{ID: "errors.envd-rpc", Rules: []string{"ERR-1", "ERR-2", "ERR-3", "ERR-4"}, Body: errsMatrix(errsEnvdRPCModes, errsFaults()),
			Title: "maps every status, reset and malformed answer of the daemon's process and filesystem RPCs (run_command, start and kill_background_command, list_files) to the status's category with its http_status and static hint, and the session stays usable"},
		Spec{ID: "errors.create-rejected", Rules: []string{"CREATE-3", "ERR-1", "ERR-2", "ERR-3"}, Tools: []string{"create_sandbox"}, Body: specCreateRejected,
			Title: "reports a platform rejection of valid create_sandbox arguments (resources the provider does not accept, an unknown template) as a categorized tool error with its http_status, creating nothing"},
		Spec{ID: "errors.kill-gone", Rules: []string{"SESSION-3", "ERR-1", "ERR-2"}, Tools: []string{"kill_sandbox", "create_sandbox"}, Body: specKillGone,
			Title: "kill_sandbox of a sandbox already killed (owned or external) or expired is a not_found tool error with http_status 404, and the session stays usable"},
		Spec{ID: "errors.missing-path", Rules: []string{"FILE-4", "ERR-1", "ERR-2"}, Tools: []string{"read_file", "list_files", "download_file"}, Body: specMissingPath,
			Title: "read_file, list_files and download_file of a missing path are not_found tool errors, on owned and external sandboxes, and the session stays usable"},
	)
	return specs
}

// specCreateRejected checks CREATE-3: arguments that pass validation
// but that the platform refuses.
func specCreateRejected(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	cases := []struct {
		name   string
		args   map[string]any
		status int
		raw    string
	}{
		// The fake, like E2B, fixes resources per template build: cpuCount
		// and memoryMB in the create body are refused with 400.
		{"cpu", map[string]any{"cpu": 3}, 400, ""},
		{"memory", map[string]any{"memory": 4096}, 400, ""},
		{"template", map[string]any{"template": "zq-no-such-template-9913"}, 404, "zq-no-such-template-9913"},
	}
	props, _ := advertisedProps(tc, "create_sandbox")
	for _, k := range cases {
		if _, has := props[k.name]; props != nil && !has {
			// Not an argument of this tool: VAL-4's case, not CREATE-3's.
			continue
		}
		tc.Fake.Journal().Reset()
		r := s.Call(ctx, "create_sandbox", k.args)
		f := errsFault{name: k.name, category: categoryOf(k.status)}
		if tc.Fake.Journal().Count(sandbox.OpCreateSandbox) > 0 {
			// The platform refused: its status must come back.
			f.status = k.status
		} else if k.status == 400 {
			// A server that knows its provider does not size sandboxes
			// may refuse before calling it: a validation error then.
			if r.Field() != "" && r.Field() != k.name {
				c.addf("create_sandbox %s: the error names field %q", k.name, r.Field())
			}
		} else {
			c.addf("create_sandbox %s: the server made no create call", k.name)
		}
		c.toolError("create_sandbox "+k.name, r, f)
		c.noLeak("create_sandbox "+k.name, r.JSON, k.raw)
	}
	c.done()
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(tc.seeded()), "a rejected create left a sandbox")
	if tc.Advertised("get_sandbox") != nil && !tc.namesSandboxes() {
		// A modern request has no default to ask for (MODERN-1), and a
		// server of profile explicit-ids keeps none: the kit's session
		// names its last sandbox for a call without one.
		r := s.Call(ctx, "get_sandbox", map[string]any{})
		tc.ExpectToolError(r, "")
	}
	tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{}))
}

// specKillGone checks SESSION-3's not_found for a sandbox that is
// already gone.
func specKillGone(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	gone := errsFault{name: "gone", status: 404, category: "not_found"}
	owned := s.mustCreate(ctx, nil)
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{}))
	c.toolError("kill_sandbox(owned, killed)", s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": owned}), gone)
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": ext}))
	c.toolError("kill_sandbox(external, killed)", s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": ext}), gone)
	expired := tc.Seed(fakeprovider.SandboxSeed{EndAt: tc.Clock.Now().Add(time.Minute)})
	tc.Clock.Advance(2 * time.Minute)
	c.toolError("kill_sandbox(external, expired)", s.Call(ctx, "kill_sandbox", map[string]any{"sandbox_id": expired}), gone)
	c.done()
	// The session still works.
	tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{}))
	tc.ExpectSuccess(s.Call(ctx, "kill_sandbox", map[string]any{}))
}

// specMissingPath checks FILE-4.
func specMissingPath(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	c := newErrsChecker(tc)
	missing := "/tmp/zq-missing-9913/none"
	for _, where := range []map[string]any{{}, {"sandbox_id": ext}} {
		label := "owned"
		if len(where) > 0 {
			label = "external"
		}
		for _, tool := range []string{"read_file", "list_files", "download_file"} {
			r := s.Call(ctx, tool, withArgs(where, "path", missing))
			for _, msg := range gomega.InterceptGomegaFailures(func() { tc.ExpectToolError(r, "not_found") }) {
				c.addf("%s(%s): %s", tool, label, failureLine(msg))
			}
			c.hint(tool+"("+label+")", r)
			c.noLeak(tool+"("+label+")", r.JSON)
		}
		// The session still works.
		c.success("list_files("+label+")", s.Call(ctx, "list_files", withArgs(where, "path", "/tmp")))
	}
	c.done()
}

// categoryOf returns the category a status maps to.
func categoryOf(status int) string {
	for _, sc := range errsStatusCategory {
		if sc.status == status {
			return sc.category
		}
	}
	return ""
}

// errsFaults returns every fault kind: each status, a connection reset and a
// malformed success body.
func errsFaults() []errsFault {
	var out []errsFault
	for _, sc := range errsStatusCategory {
		out = append(out, errsFault{name: fmt.Sprintf("status-%d", sc.status), status: sc.status, category: sc.category})
	}
	return append(out,
		errsFault{name: "reset", reset: true, category: "unavailable"},
		errsFault{name: "malformed", malformed: true, category: "provider_error"})
}

// inject installs the fault on op until it is cleared; body replaces the
// fake's default error body (itself a canary) when not empty.
func (f errsFault) inject(tc *TestContext, op, body string) *fakeprovider.FaultHandle {
	return tc.Fake.InjectFault(fakeprovider.Fault{Op: op, Status: f.status, Body: body, Reset: f.reset, Malformed: f.malformed})
}

// errsInjected are the faults of one case: on a mode's op and on each of
// its alternatives.
type errsInjected []*fakeprovider.FaultHandle

// injectMode installs f on m's op and alternatives.
func (f errsFault) injectMode(tc *TestContext, m errsMode, body string) errsInjected {
	var hs errsInjected
	for _, op := range append([]string{m.op}, m.alt...) {
		hs = append(hs, f.inject(tc, op, body))
	}
	return hs
}

// Hits is how many requests met any of the faults.
func (hs errsInjected) Hits() int {
	n := 0
	for _, h := range hs {
		n += h.Hits()
	}
	return n
}

// Clear removes every fault.
func (hs errsInjected) Clear() {
	for _, h := range hs {
		h.Clear()
	}
}

// opsText names m's op, and its alternatives, for a report.
func (m errsMode) opsText() string {
	return strings.Join(append([]string{m.op}, m.alt...), " or ")
}

// errsEnv is what the modes of one spec share: a session, an owned sandbox
// and an external (seeded) one.
type errsEnv struct {
	ctx      context.Context
	tc       *TestContext
	s        *Session
	owned    string // created by this session (create_sandbox), "" when create_sandbox is not advertised
	external string // seeded, never owned
}

// errsReadablePath is a file every fake sandbox (and every Linux sandbox)
// has, for read_file and download_file.
const errsReadablePath = "/etc/hostname"

// newErrsEnv connects a session, creates an owned sandbox and seeds an
// external one.
func (tc *TestContext) newErrsEnv(ctx context.Context) *errsEnv {
	ginkgo.GinkgoHelper()
	env := &errsEnv{ctx: ctx, tc: tc, s: tc.Connect(ctx)}
	env.external = tc.Seed(fakeprovider.SandboxSeed{Secure: true})
	if tc.Advertised("create_sandbox") != nil {
		env.owned = env.s.mustCreate(ctx, nil)
	}
	return env
}

// errsMode is one way a tool reaches the platform: the tool, the operation
// the fault targets, and how to build the call's arguments.
type errsMode struct {
	name string
	tool string
	op   string
	// alt are further operations the call may make in op's place (a 1.x
	// SDK's v1 list, a code interpreter's /execute): the fault is
	// injected on each, and the case is exercised when the call met any.
	alt []string
	// bodiless: the operation's success carries no body, so a malformed
	// body is not observable and the call may succeed.
	bodiless bool
	// content: the operation's success body is file content, so a
	// malformed body is not a fault at all.
	content bool
	// needs are further tools the mode's setup calls.
	needs []string
	// owned: the mode works on the session's owned sandbox.
	owned bool
	// oneShot: the mode is run_code's own create, for a server of profile
	// one-shot (which names no sandbox), and only for one.
	oneShot bool
	// args builds the arguments of one case (it may set up a new sandbox
	// or command first); the same arguments are used for the follow-up.
	args func(env *errsEnv) map[string]any
}

func withArgs(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// errsDataTools are the data-plane tools with the arguments of a harmless
// call, keyed by tool (start_background_command's command ends at once).
var errsDataTools = []struct {
	tool string
	args map[string]any
}{
	{"run_command", map[string]any{"command": "echo zq-errs"}},
	{"run_code", map[string]any{"code": "echo zq-errs", "language": "bash"}},
	{"read_file", map[string]any{"path": errsReadablePath}},
	{"write_file", map[string]any{"path": "/tmp/zq-errs.txt", "content": "zq-errs"}},
	{"list_files", map[string]any{"path": "/tmp"}},
	{"upload_file", map[string]any{"path": "/tmp/zq-errs.bin", "data_base64": "enEtZXJycw=="}},
	{"download_file", map[string]any{"path": errsReadablePath}},
	{"start_background_command", map[string]any{"command": "echo zq-errs"}},
}

// errsControlModes are the control-plane modes: every lifecycle tool on
// owned and external sandboxes, and every data-plane tool on an external
// sandbox, which it reaches through the platform's connect call (RENEW-2).
func errsControlModes() []errsMode {
	modes := []errsMode{
		// A 1.x SDK lists with the v1 route (LIST-1 fails it, but its
		// errors are still ERR-1's to map).
		{name: "list_sandboxes", tool: "list_sandboxes", op: sandbox.OpListSandboxes, alt: []string{sandbox.OpListSandboxesV1},
			args: func(*errsEnv) map[string]any { return map[string]any{} }},
		{name: "get_sandbox(external)", tool: "get_sandbox", op: sandbox.OpGetSandbox,
			args: func(e *errsEnv) map[string]any { return map[string]any{"sandbox_id": e.external} }},
		{name: "get_sandbox(owned)", tool: "get_sandbox", op: sandbox.OpGetSandbox, owned: true,
			args: func(e *errsEnv) map[string]any { return map[string]any{"sandbox_id": e.owned} }},
		{name: "create_sandbox", tool: "create_sandbox", op: sandbox.OpCreateSandbox,
			args: func(*errsEnv) map[string]any { return map[string]any{} }},
		{name: "set_sandbox_timeout(external)", tool: "set_sandbox_timeout", op: sandbox.OpSetTimeout, bodiless: true,
			args: func(e *errsEnv) map[string]any { return map[string]any{"sandbox_id": e.external, "timeout": 600} }},
		{name: "set_sandbox_timeout(owned)", tool: "set_sandbox_timeout", op: sandbox.OpSetTimeout, bodiless: true, owned: true,
			args: func(e *errsEnv) map[string]any { return map[string]any{"sandbox_id": e.owned, "timeout": 600} }},
		{name: "kill_sandbox(external)", tool: "kill_sandbox", op: sandbox.OpKillSandbox, bodiless: true,
			args: func(e *errsEnv) map[string]any {
				return map[string]any{"sandbox_id": e.tc.Seed(fakeprovider.SandboxSeed{})}
			}},
		{name: "kill_sandbox(owned)", tool: "kill_sandbox", op: sandbox.OpKillSandbox, bodiless: true, needs: []string{"create_sandbox"},
			args: func(e *errsEnv) map[string]any {
				return map[string]any{"sandbox_id": e.s.mustCreate(e.ctx, nil)}
			}},
	}
	for _, dt := range errsDataTools {
		// e2b 1.x connects to an existing sandbox with GET /sandboxes/{id}.
		modes = append(modes, errsMode{name: dt.tool + "(external)", tool: dt.tool, op: sandbox.OpConnectSandbox,
			alt:  []string{sandbox.OpGetSandbox},
			args: func(e *errsEnv) map[string]any { return withArgs(dt.args, "sandbox_id", e.external) }})
	}
	return append(modes, errsMode{name: "run_code(one-shot)", tool: "run_code", op: sandbox.OpCreateSandbox, oneShot: true,
		args: func(*errsEnv) map[string]any { return map[string]any{"code": "echo zq-errs"} }})
}

// errsPlatformModes are the modes of the errors.status-*, reset and
// malformed specs and of leakage.faults: the control-plane modes and the
// code interpreter's.
func errsPlatformModes() []errsMode {
	return append(errsControlModes(), errsInterpreterModes()...)
}

// errsInterpreterModes fault the call that runs a one-shot server's code
// once its create succeeded: the code interpreter's /execute (port 49999),
// or the daemon's process start for a server that runs code as a command.
// A failed execution is the provider's answer like any other: mapped
// (ERR-1, ERR-2), never relayed raw (ERR-3).
func errsInterpreterModes() []errsMode {
	return []errsMode{{name: "run_code(one-shot) execute", tool: "run_code",
		op: fakeprovider.OpCodeInterpreterExecute, alt: []string{sandbox.OpProcessStart}, oneShot: true,
		// Only code, in the default language (python): the create mode's
		// arguments, which any run_code takes.
		args: func(*errsEnv) map[string]any { return map[string]any{"code": `print("zq-errs")`} }}}
}

// errsEnvdFileModes are the data-plane tools whose in-sandbox call is a
// plain HTTP request to the daemon's /files routes, on the owned default
// sandbox.
func errsEnvdFileModes() []errsMode {
	ops := map[string]string{
		"read_file": sandbox.OpFilesDownload, "download_file": sandbox.OpFilesDownload,
		"write_file": sandbox.OpFilesUpload, "upload_file": sandbox.OpFilesUpload, "run_code": sandbox.OpFilesUpload,
	}
	var modes []errsMode
	for _, dt := range errsDataTools {
		op, ok := ops[dt.tool]
		if !ok {
			continue
		}
		m := errsMode{name: dt.tool + "(owned)", tool: dt.tool, op: op, owned: true,
			content: op == sandbox.OpFilesDownload,
			args:    func(*errsEnv) map[string]any { return dt.args }}
		if dt.tool == "run_code" {
			// A server built on the code interpreter posts the code to
			// its /execute in place of the upload.
			m.alt = []string{fakeprovider.OpCodeInterpreterExecute}
		}
		modes = append(modes, m)
	}
	return modes
}

// errsEnvdRPCModes are the data-plane tools whose in-sandbox call is an
// RPC of the daemon's process or filesystem service, on the owned default
// sandbox.
func errsEnvdRPCModes() []errsMode {
	return []errsMode{
		{name: "run_command(owned)", tool: "run_command", op: sandbox.OpProcessStart, owned: true,
			args: func(*errsEnv) map[string]any { return map[string]any{"command": "echo zq-errs"} }},
		{name: "start_background_command(owned)", tool: "start_background_command", op: sandbox.OpProcessStart, owned: true,
			args: func(*errsEnv) map[string]any { return map[string]any{"command": "echo zq-errs"} }},
		{name: "list_files(owned)", tool: "list_files", op: sandbox.OpFilesystemListDir, owned: true,
			args: func(*errsEnv) map[string]any { return map[string]any{"path": "/tmp"} }},
		{name: "kill_background_command(owned)", tool: "kill_background_command", op: sandbox.OpProcessSendSignal, owned: true,
			needs: []string{"start_background_command"},
			args: func(e *errsEnv) map[string]any {
				r := e.tc.ExpectSuccess(e.s.Call(e.ctx, "start_background_command", map[string]any{"command": "sleep 60"}))
				return map[string]any{"command_id": r.String("command_id")}
			}},
	}
}

// usable reports whether a mode can run against this server, failing
// the spec when a tool is missing under RequireAll.
func (env *errsEnv) usable(m errsMode) bool {
	ginkgo.GinkgoHelper()
	if oneShot := env.tc.Config.Profile == ProfileOneShot && !env.tc.Config.RequireAll; m.oneShot != oneShot {
		// A one-shot server names no sandbox: its only platform call to
		// fault is the create each run_code makes.
		return false
	}
	for _, tool := range append([]string{m.tool}, m.needs...) {
		if env.tc.Advertised(tool) == nil {
			if env.tc.Config.RequireAll {
				ginkgo.Fail(fmt.Sprintf("the server does not advertise %s (required: every contract tool)", tool))
			}
			fmt.Fprintf(ginkgo.GinkgoWriter, "mode %s skipped: %s is not advertised\n", m.name, tool)
			return false
		}
	}
	if m.owned && env.owned == "" {
		fmt.Fprintf(ginkgo.GinkgoWriter, "mode %s skipped: no owned sandbox (create_sandbox is not advertised)\n", m.name)
		return false
	}
	return true
}

// leaks lists what of a text must not reach a client or a log line
// (ERR-3, META-4): a canary of the fake, a URL, a stack trace, or one of
// the extra values.
func (tc *TestContext) leaks(text string, extra ...string) []string {
	var out []string
	if c, ok := tc.Fake.FindCanary(text); ok {
		out = append(out, fmt.Sprintf("holds the secret %q", c))
	}
	for _, bad := range []string{"http://", "https://", "goroutine ", "panic:", ".go:"} {
		if strings.Contains(text, bad) {
			out = append(out, fmt.Sprintf("holds %q (a URL or stack trace)", bad))
		}
	}
	for _, v := range extra {
		if v != "" && strings.Contains(strings.ToLower(text), strings.ToLower(v)) {
			out = append(out, fmt.Sprintf("holds the raw value %q", v))
		}
	}
	return out
}

// errsChecker collects the problems of a matrix and remembers the recovery
// hint of each category, which must be identical across tools (ERR-2).
type errsChecker struct {
	tc       *TestContext
	hints    map[string]string
	hintFrom map[string]string
	problems []string
	// defects counts the problems that are defects (leaks), true however
	// the rest of the spec went; unexercised are the cases whose fault
	// was never met, which prove nothing either way.
	defects     int
	unexercised []string
}

func newErrsChecker(tc *TestContext) *errsChecker {
	return &errsChecker{tc: tc, hints: map[string]string{}, hintFrom: map[string]string{}}
}

func (c *errsChecker) addf(format string, a ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, a...))
}

// toolError checks one result against the fault that caused it.
func (c *errsChecker) toolError(label string, r *Result, f errsFault) {
	if msgs := gomega.InterceptGomegaFailures(func() { c.tc.ExpectToolError(r, "") }); len(msgs) > 0 {
		c.addf("%s: %s", label, failureLine(msgs[0]))
	}
	e := r.ErrorObject()
	if e == nil {
		return
	}
	if got := r.Category(); f.category != "" && got != f.category {
		c.addf("%s: category %q, want %q", label, got, f.category)
	}
	status, hasStatus := e["http_status"]
	switch {
	case f.status != 0 && !hasStatus:
		c.addf("%s: the error has no http_status, want %d (the injected status)", label, f.status)
	case f.status != 0 && status != float64(f.status):
		c.addf("%s: http_status %s, want %d (the injected status)", label, jsonText(status), f.status)
	case f.reset && hasStatus:
		c.addf("%s: http_status %s although no response arrived (connection reset)", label, jsonText(status))
	}
	c.hint(label, r)
}

// hint records the recovery hint of a tool's error category and reports a
// different hint for the same tool and category: a static hint depends on
// neither the input nor the provider's answer (ERR-2). Tools may word their
// hints differently.
func (c *errsChecker) hint(label string, r *Result) {
	cat := r.Tool + "/" + r.Category()
	rec, _ := r.ErrorObject()["recovery"].(string)
	if r.Category() == "" || rec == "" {
		return
	}
	if prev, ok := c.hints[cat]; !ok {
		c.hints[cat], c.hintFrom[cat] = rec, label
	} else if prev != rec {
		c.addf("%s: recovery hint of %s differs from %s's: %q vs %q", label, r.Category(), c.hintFrom[cat], rec, prev)
	}
}

// noLeak checks a text for leaks.
func (c *errsChecker) noLeak(label, text string, extra ...string) {
	for _, l := range c.tc.leaks(text, extra...) {
		c.addf("%s: %s", label, l)
		c.defects++
		c.tc.defect(leakRule(l), label+": "+l)
	}
}

// leakRule is the rule a leak breaks: a secret is META-4's, a URL, stack
// trace or raw provider value ERR-3's.
func leakRule(leak string) string {
	if strings.HasPrefix(leak, "holds the secret") {
		return "META-4"
	}
	return "ERR-3"
}

// success checks that a call succeeded (TOOLS-3).
func (c *errsChecker) success(label string, r *Result) {
	switch {
	case r.Err != nil:
		c.addf("%s: protocol error: %v", label, r.Err)
	case r.IsError:
		c.addf("%s: unexpected tool error: %s", label, truncate(r.Text, 300))
	case r.structured == nil && !c.tc.Config.RequireAll:
		// Usable is what this asks: a success without structuredContent is
		// TOOLS-3's, reported once for the run, not an error of this spec.
		c.tc.finding("TOOLS-3", r.Tool)
	default:
		if msgs := gomega.InterceptGomegaFailures(func() { c.tc.ExpectSuccess(r) }); len(msgs) > 0 {
			c.addf("%s: %s", label, failureLine(msgs[0]))
		}
	}
}

// faultHit reports whether the call met the injected fault, and records a
// problem when it did not: a fault the server's call never reached proves
// nothing about how the server handles it, so the case cannot pass.
//
// When the call failed, its answer is quoted: it usually says why the
// call never got as far (an argument the tool refuses), and the summary
// groups the specs by that cause.
func (c *errsChecker) faultHit(label string, h interface{ Hits() int }, op string, r *Result) bool {
	if h.Hits() > 0 {
		return true
	}
	answered := ""
	switch {
	case r.Err != nil:
		answered = "; it failed with: " + failureLine(r.Err.Error())
	case r.IsError:
		answered = "; it answered: " + failureLine(r.Text)
	}
	c.unexercised = append(c.unexercised, fmt.Sprintf("%s: the call made no %s request, so the fault was never exercised (the tool reached the provider another way, or not at all)%s", label, op, answered))
	return false
}

// done fails the spec with every problem found. Cases whose fault was
// never exercised prove nothing: when they are all the spec has besides
// defects, the spec is inconclusive (its defects still fail it).
func (c *errsChecker) done() {
	ginkgo.GinkgoHelper()
	if len(c.unexercised) > 0 && len(c.problems) == c.defects {
		c.tc.inconclusive(inconclusiveNotExercised, c.unexercisedReason())
	}
	all := append(slices.Clone(c.problems), c.unexercised...)
	if len(all) > 0 {
		ginkgo.Fail(fmt.Sprintf("%d problem(s):\n  %s", len(all), strings.Join(all, "\n  ")))
	}
}

// unexercisedReason is why the spec is inconclusive: its first case
// whose fault was never met, and how many more there were.
func (c *errsChecker) unexercisedReason() string {
	why := c.unexercised[0]
	if n := len(c.unexercised) - 1; n > 0 {
		why += fmt.Sprintf(" (and %d more %s alike)", n, countNoun(n, "case", "cases"))
	}
	return why
}

// failureLine squeezes a Gomega failure message onto one line.
func failureLine(s string) string {
	// Gomega follows a description with a dump of the values ("Expected
	// <map[string]interface {} | len:0>: ..."): the description says it
	// in words.
	if i := strings.Index(s, "\nExpected"); i > 0 {
		s = s[:i]
	}
	return truncate(strings.Join(strings.Fields(s), " "), 300)
}

// runCase injects f on m's operation, makes the call, clears the fault
// and checks the tool error; then makes the same call again, which must
// succeed.
func (env *errsEnv) runCase(c *errsChecker, m errsMode, f errsFault) {
	args := m.args(env)
	h := f.injectMode(env.tc, m, "")
	r := env.s.Call(env.ctx, m.tool, args)
	h.Clear()
	label := m.name + " " + f.name
	if !c.faultHit(label, h, m.opsText(), r) {
		if r.IsError {
			// Whatever stopped the call, its error must not leak (ERR-3):
			// a defect the unexercised fault must not hide.
			c.noLeak(label, r.JSON)
		}
		return
	}
	switch {
	case f.malformed && m.content:
		// The body of a download is the file's bytes: nothing is malformed.
	case f.malformed && m.bodiless && r.Err == nil && !r.IsError:
		// The operation's success has no body to be malformed.
	default:
		c.toolError(label, r, f)
	}
	if !(f.malformed && m.content) {
		c.noLeak(label, r.JSON)
	}
	c.success(label+", then the same call without the fault", env.s.Call(env.ctx, m.tool, args))
}

// errsMatrix is the body of a spec running the given faults on the given
// modes.
func errsMatrix(modes func() []errsMode, faults []errsFault) func(ctx context.Context, tc *TestContext) {
	return func(ctx context.Context, tc *TestContext) {
		env := tc.newErrsEnv(ctx)
		c := newErrsChecker(tc)
		ran := 0
		for _, m := range modes() {
			if !env.usable(m) {
				continue
			}
			for _, f := range faults {
				env.runCase(c, m, f)
				ran++
			}
		}
		c.done()
		if ran == 0 {
			ginkgo.Skip("the server advertises none of the tools this spec needs")
		}
	}
}
