package conformance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// The bounds family sends every tool arguments that must be rejected
// before any platform call (VAL-1..7): each bounded integer at min-1 and
// max+1 and as a boolean, a string, a non-integral number and null; each
// string argument as a number, a boolean and null; missing required
// arguments; undefined arguments; an explicit empty sandbox_id; malformed
// envs, signals and base64. Each must be a tool error naming the field,
// holding no part of a distinctive submitted value, after which the fake
// has seen no request and nothing was created; and the session's state is
// unchanged. Valid edges (min and max) are then accepted where cheap.

// Distinctive submitted values: a result can only hold them by echoing.
const (
	boundsBait      = "zq-secret-9913"
	boundsBaitInt   = 987654
	boundsBaitNeg   = -7731
	boundsBaitFloat = 7731.5
	boundsBaitHuge  = 987654321
)

// boundsCase is one call that must be rejected.
type boundsCase struct {
	name  string
	args  map[string]any
	field string
	// bait are submitted values that must not appear anywhere in the result.
	bait []string
}

// validArgs are the arguments of a valid call: each case builder below
// breaks them in one place (one value wrong, one left out, one added).
type validArgs map[string]any

// boundsSpecs are the bounds family's specs of the tools' own arguments,
// one per tool.
func boundsSpecs() []Spec {
	return slices.Concat(boundsLifecycleSpecs(), boundsExecFileSpecs(), boundsBackgroundBinarySpecs())
}

// with returns base with key set to v.
func (base validArgs) with(key string, v any) map[string]any {
	out := make(map[string]any, len(base)+1)
	for k, x := range base {
		out[k] = x
	}
	out[key] = v
	return out
}

// without returns base without key.
func (base validArgs) without(key string) map[string]any {
	out := make(map[string]any, len(base))
	for k, x := range base {
		if k != key {
			out[k] = x
		}
	}
	return out
}

// baitOf returns the text of a submitted value when it is distinctive
// enough that its presence in a result can only be an echo.
func baitOf(v any) []string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return nil
	}
	if len(s) < 4 {
		return nil
	}
	return []string{s}
}

// valueCase is one rejected value of a field.
func (base validArgs) valueCase(field, name string, v any) boundsCase {
	return boundsCase{name: field + "=" + name, args: base.with(field, v), field: field, bait: baitOf(v)}
}

// integerCases returns the cases of an integer argument bounded by
// [min, max]; max < 0 means the contract and the schema give no maximum.
func (base validArgs) integerCases(field string, min, max int) []boundsCase {
	cs := []boundsCase{
		base.valueCase(field, "min-1", min-1),
		base.valueCase(field, "boolean", true),
		base.valueCase(field, "string", boundsBait),
		base.valueCase(field, "numeric-string", "7731"),
		base.valueCase(field, "fraction", boundsBaitFloat),
		base.valueCase(field, "fraction-in-range", float64(min)+0.5),
		base.valueCase(field, "null", nil),
		base.valueCase(field, "object", map[string]any{"n": boundsBait}),
	}
	if min > boundsBaitNeg {
		cs = append(cs, base.valueCase(field, "negative", boundsBaitNeg))
	}
	if max >= 0 {
		cs = append(cs, base.valueCase(field, "max+1", max+1))
		if max < boundsBaitHuge {
			cs = append(cs, base.valueCase(field, "far-above", boundsBaitHuge))
		}
	}
	return cs
}

// stringCases returns the wrong-type cases of a string argument.
func (base validArgs) stringCases(field string) []boundsCase {
	return []boundsCase{
		base.valueCase(field, "number", boundsBaitInt),
		base.valueCase(field, "boolean", true),
		base.valueCase(field, "null", nil),
		base.valueCase(field, "array", []any{boundsBait}),
	}
}

// sandboxIDCases returns the cases of sandbox_id: explicitly empty (VAL-3)
// and wrong types.
func (base validArgs) sandboxIDCases() []boundsCase {
	return append([]boundsCase{
		base.valueCase("sandbox_id", "empty", ""),
		base.valueCase("sandbox_id", "unconfigured-provider", boundsUnconfiguredProvider+":zqsandbox9913"),
	}, base.stringCases("sandbox_id")...)
}

// boundsUnconfiguredProvider is a provider ID no server configures.
const boundsUnconfiguredProvider = "zqnoprovider9913"

// envsCases returns the cases of an envs argument (VAL-5): not an object,
// and values that are not strings.
func (base validArgs) envsCases() []boundsCase {
	return []boundsCase{
		base.valueCase("envs", "array", []any{"ZQ_A=" + boundsBait}),
		base.valueCase("envs", "string", "ZQ_A="+boundsBait),
		base.valueCase("envs", "number", boundsBaitInt),
		base.valueCase("envs", "boolean", true),
		base.valueCase("envs", "null", nil),
		{name: "envs.value=number", args: base.with("envs", map[string]any{"ZQ_A": boundsBaitInt}), field: "envs", bait: []string{"987654"}},
		{name: "envs.value=boolean", args: base.with("envs", map[string]any{"ZQ_A": true}), field: "envs"},
		{name: "envs.value=null", args: base.with("envs", map[string]any{"ZQ_A": nil}), field: "envs"},
		{name: "envs.value=object", args: base.with("envs", map[string]any{"ZQ_A": map[string]any{"v": boundsBait}}), field: "envs", bait: []string{boundsBait}},
		{name: "envs.value=array", args: base.with("envs", map[string]any{"ZQ_A": []any{boundsBait}}), field: "envs", bait: []string{boundsBait}},
	}
}

// missingCases returns one case per required argument left out.
func (base validArgs) missingCases(required ...string) []boundsCase {
	var cs []boundsCase
	for _, f := range required {
		cs = append(cs, boundsCase{name: "missing " + f, args: base.without(f), field: f})
	}
	return cs
}

// unknownCases returns one case per argument the tool does not define
// (VAL-4), each with a distinctive value.
func (base validArgs) unknownCases(names ...string) []boundsCase {
	var cs []boundsCase
	for _, n := range names {
		cs = append(cs, boundsCase{name: "unknown " + n, args: base.with(n, boundsBait), field: n, bait: []string{boundsBait}})
	}
	return cs
}

// enumCases returns values outside an enum.
func (base validArgs) enumCases(field string, bad ...string) []boundsCase {
	cs := []boundsCase{base.valueCase(field, "not-in-enum", boundsBait)}
	for _, b := range bad {
		cs = append(cs, base.valueCase(field, strconv.Quote(b), b))
	}
	return append(cs, base.valueCase(field, "number", boundsBaitInt), base.valueCase(field, "null", nil))
}

// advertisedProps returns the properties of the input schema the server
// advertises for a contract tool, keyed by contract argument name (a tool
// map's renamed arguments under their contract names), and whether it
// advertises the tool with properties at all.
func advertisedProps(tc *TestContext, tool string) (map[string]any, bool) {
	t := tc.Advertised(tool)
	if t == nil {
		return nil, false
	}
	props, ok := schemaMap(t.InputSchema)["properties"].(map[string]any)
	if !ok || tc.Config == nil {
		return props, ok
	}
	out := make(map[string]any, len(props))
	for k, v := range props {
		out[k] = v
	}
	for contract, a := range tc.Config.adapter(tool).Args {
		if v, has := props[a.Name]; has && a.Name != contract {
			delete(out, a.Name)
			out[contract] = v
		}
	}
	return out, true
}

// advertisedMax returns the maximum the server advertises for a
// tool's integer argument, or -1. The kit tests max+1 against it for the
// bounds the contract leaves to the server ("capped").
func (tc *TestContext) advertisedMax(tool, field string) int {
	props, _ := advertisedProps(tc, tool)
	p, _ := props[field].(map[string]any)
	if m, ok := p["maximum"].(float64); ok && m == math.Trunc(m) && m < 1<<52 {
		return int(m)
	}
	return -1
}

// applicableCases drops the cases that give a wrong value to an argument
// the tool does not advertise: rejecting it is VAL-4's business, checked by
// the "unknown" cases, not a bound the tool has. A tool without an
// advertised schema keeps every case.
func (tc *TestContext) applicableCases(tool string, cases []boundsCase) []boundsCase {
	props, ok := advertisedProps(tc, tool)
	if !ok {
		return cases
	}
	var out []boundsCase
	for _, c := range cases {
		if _, has := props[c.field]; has || strings.HasPrefix(c.name, "unknown ") {
			out = append(out, c)
		}
	}
	// Nor does a case send, beside its field, an argument the tool does
	// not define (run_code's language for a tool without it): the call
	// would be refused for that argument instead of the case's.
	for i, c := range out {
		for k := range c.args {
			if _, has := props[k]; !has && k != c.field {
				out[i].args = validArgs(out[i].args).without(k)
			}
		}
	}
	return out
}

// expectRejected makes every call of cases and checks each rejection: a tool
// error of category invalid_argument naming the field, holding no bait,
// and no request to the fake at all (VAL-6, VAL-7). It reports every
// failing case at once.
func (s *Session) expectRejected(ctx context.Context, tool string, cases []boundsCase) {
	ginkgo.GinkgoHelper()
	tc := s.tc
	cases = tc.applicableCases(tool, cases)
	// Explicit IDs: the kit's own create_sandbox is not the rejected call's.
	s.kitSandbox(ctx, tool)
	var problems []string
	failed := 0
	for _, c := range cases {
		tc.Fake.Journal().Reset()
		r := s.Call(ctx, tool, c.args)
		before := len(problems)
		// The first failure of a case says enough (a success fails every
		// later check too).
		if msgs := gomega.InterceptGomegaFailures(func() { tc.ExpectInvalidField(r, c.field, c.bait...) }); len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("%s %s: %s", tool, c.name, failureLine(msgs[0])))
		}
		if n := tc.Fake.Journal().Len(); n > 0 {
			problems = append(problems, fmt.Sprintf("%s %s: the server made %d platform request(s) (%s) for a rejected call",
				tool, c.name, n, strings.Join(tc.Fake.Journal().Ops(), ", ")))
		}
		if len(problems) > before {
			failed++
		}
	}
	if failed > 0 {
		ginkgo.Fail(fmt.Sprintf("%d of %d calls that must be rejected were not rejected cleanly:\n  %s", failed, len(cases), strings.Join(problems, "\n  ")))
	}
}

// expectAccepted checks that each argument set is accepted.
func (s *Session) expectAccepted(ctx context.Context, tool string, argSets ...map[string]any) {
	ginkgo.GinkgoHelper()
	tc := s.tc
	for _, a := range argSets {
		r := s.Call(ctx, tool, a)
		gomega.Expect(r.IsError).To(gomega.BeFalse(), "%s %s: a valid edge was rejected: %s", tool, argsText(a), truncate(r.JSON, 300))
		tc.ExpectSuccess(r)
	}
}

// expectUnchanged checks that rejected calls left the session and the
// platform as they were (VAL-7): no sandbox beyond want live, and
// get_sandbox without sandbox_id still answers as before: a tool error
// with no platform call when there was no default, else the default's ID.
func (s *Session) expectUnchanged(ctx context.Context, live int, defaultID string) {
	ginkgo.GinkgoHelper()
	tc := s.tc
	live += s.kitSandbox(ctx, "")
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(live), "rejected calls created a sandbox")
	if tc.Advertised("get_sandbox") == nil || (defaultID == "" && (tc.Config.Profile != ProfileContract && tc.Config.Profile != "" || tc.Era() == EraModern)) {
		// Without a default (GET-2) only a contract server's sessions must
		// refuse (a modern request has none: MODERN-1, its own spec).
		return
	}
	tc.Fake.Journal().Reset()
	r := s.Call(ctx, "get_sandbox", map[string]any{})
	if defaultID == "" {
		tc.ExpectToolError(r, "")
		tc.ExpectNoRequests("get_sandbox without a default after rejected calls")
		return
	}
	tc.ExpectSuccess(r)
	gomega.Expect(r.String("sandbox_id")).To(gomega.Equal(defaultID), "rejected calls changed the default sandbox")
}

// boundsLifecycleUnknown are the arguments the lifecycle tools must refuse
// (VAL-4, CREATE-4).
var boundsLifecycleUnknown = []string{"team", "sandbox_domain", "api_key"}

// boundsDataPlane is the body of a data-plane tool's spec: its
// rejections in a fresh session (no implicit sandbox may be created), then
// accepted edges.
func boundsDataPlane(tool string, cases func(tc *TestContext) []boundsCase, accept func(tc *TestContext) []map[string]any) func(ctx context.Context, tc *TestContext) {
	return func(ctx context.Context, tc *TestContext) {
		s := tc.Connect(ctx)
		s.expectRejected(ctx, tool, cases(tc))
		s.expectUnchanged(ctx, 0, "")
		if accept != nil {
			s.expectAccepted(ctx, tool, accept(tc)...)
		}
	}
}

// boundsDataPlaneSpec is the bounds spec of a data-plane tool, checked by
// rule besides the VAL rules: it rejects what rejects says, an empty
// sandbox_id and undefined arguments without any platform call or
// implicit sandbox (VAL-3, VAL-4, VAL-6, VAL-7), and accepts the boundary
// values accepts says (VAL-1, VAL-2; "" when it has none).
func boundsDataPlaneSpec(tool, rule, rejects, accepts string, body func(context.Context, *TestContext)) Spec {
	rules := []string{rule}
	title := tool + " rejects " + rejects + ", an empty sandbox_id and undefined arguments without any platform call or implicit sandbox"
	if accepts != "" {
		rules = append(rules, "VAL-1", "VAL-2")
		title += ", and accepts " + accepts
	}
	return Spec{ID: "bounds." + strings.ReplaceAll(tool, "_", "-"), Rules: append(rules, "VAL-3", "VAL-4", "VAL-6", "VAL-7"), Tools: []string{tool}, Body: body,
		Title: title}
}

// boundsLifecycleSpecs are the bounds of the lifecycle tools and create_sandbox.
func boundsLifecycleSpecs() []Spec {
	return []Spec{
		{ID: "bounds.list-sandboxes", Rules: []string{"LIST-3", "VAL-1", "VAL-2", "VAL-4", "VAL-6", "VAL-7"}, Tools: []string{"list_sandboxes"}, Body: specBoundsListSandboxes,
			Title: "list_sandboxes rejects a limit outside 1-100, a negative or over-cap offset, a status outside running/paused, wrong types and undefined arguments, without any platform call, and accepts the edges"},
		{ID: "bounds.get-sandbox", Rules: []string{"VAL-3", "VAL-4", "VAL-6", "VAL-7", "GET-2"}, Tools: []string{"get_sandbox"}, Body: specBoundsGetSandbox,
			Title: "get_sandbox rejects an explicitly empty or non-string sandbox_id and undefined arguments (team, sandbox_domain) without any platform call, and without a default still fails with no call"},
		{ID: "bounds.kill-sandbox", Rules: []string{"VAL-3", "VAL-4", "VAL-6", "VAL-7"}, Tools: []string{"kill_sandbox"}, Body: specBoundsKillSandbox,
			Title: "kill_sandbox rejects an explicitly empty or non-string sandbox_id and undefined arguments (team, sandbox_domain) without any platform call or kill"},
		{ID: "bounds.set-sandbox-timeout", Rules: []string{"TIMEOUT-1", "VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"}, Tools: []string{"set_sandbox_timeout"}, Body: specBoundsSetSandboxTimeout,
			Title: "set_sandbox_timeout requires an integer timeout of 1-86400 and a non-empty sandbox_id, rejecting everything else without any platform call or change of the renewal policy, and accepts 1 and 86400"},
		{ID: "bounds.create-sandbox", Rules: []string{"CREATE-1", "CREATE-4", "VAL-1", "VAL-2", "VAL-4", "VAL-5", "VAL-6", "VAL-7"}, Tools: []string{"create_sandbox"}, Body: specBoundsCreateSandbox,
			Title: "create_sandbox rejects a timeout outside 1-86400, non-positive or non-integer cpu and memory, non-object envs or non-string env values, wrong types and undefined arguments such as team, without any platform call, creation or change of the default, and accepts timeouts 1 and 86400"},
	}
}

func specBoundsListSandboxes(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	base := validArgs{}
	offMax := tc.advertisedMax("list_sandboxes", "offset")
	var cs []boundsCase
	cs = append(cs, base.integerCases("limit", 1, 100)...)
	cs = append(cs, base.integerCases("offset", 0, offMax)...)
	cs = append(cs, base.enumCases("status", "killed", "pausing")...)
	cs = append(cs, base.stringCases("provider")...)
	cs = append(cs, base.valueCase("provider", "unconfigured", boundsUnconfiguredProvider))
	cs = append(cs, base.stringCases("region")...)
	cs = append(cs, base.unknownCases(append(boundsLifecycleUnknown, "cursor", "next_token")...)...)
	s.expectRejected(ctx, "list_sandboxes", cs)
	s.expectUnchanged(ctx, 0, "")
	accept := []map[string]any{{"limit": 1}, {"limit": 100}, {"offset": 0}, {"status": "running"}, {"status": "paused"}}
	if offMax >= 0 {
		accept = append(accept, map[string]any{"offset": offMax})
	}
	s.expectAccepted(ctx, "list_sandboxes", accept...)
}

func specBoundsGetSandbox(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	base := validArgs{}
	cs := base.sandboxIDCases()
	cs = append(cs, base.unknownCases(append(boundsLifecycleUnknown, "region", "provider")...)...)
	s.expectRejected(ctx, "get_sandbox", cs)
	s.expectUnchanged(ctx, 0, "")
}

func specBoundsKillSandbox(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	victim := tc.Seed(fakeprovider.SandboxSeed{})
	base := validArgs{}
	cs := base.sandboxIDCases()
	// An undefined argument next to a real sandbox_id must not kill it.
	cs = append(cs, validArgs{"sandbox_id": victim}.unknownCases(append(boundsLifecycleUnknown, "region", "provider")...)...)
	s.expectRejected(ctx, "kill_sandbox", cs)
	_, alive := tc.Fake.Sandbox(victim)
	gomega.Expect(alive).To(gomega.BeTrue(), "a rejected kill_sandbox killed the sandbox")
	s.expectUnchanged(ctx, 1, "")
}

func specBoundsSetSandboxTimeout(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	base := validArgs{"sandbox_id": ext, "timeout": 600}
	var cs []boundsCase
	cs = append(cs, base.missingCases("timeout")...)
	cs = append(cs, validArgs{}.missingCases("timeout")...)
	cs = append(cs, base.integerCases("timeout", 1, 86400)...)
	cs = append(cs, base.sandboxIDCases()...)
	cs = append(cs, base.unknownCases(boundsLifecycleUnknown...)...)
	s.expectRejected(ctx, "set_sandbox_timeout", cs)
	s.expectUnchanged(ctx, 1, "")
	s.expectAccepted(ctx, "set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 1}, map[string]any{"sandbox_id": ext, "timeout": 86400})
	if tc.Advertised("create_sandbox") == nil || tc.Advertised("run_command") == nil {
		return
	}
	// A rejected call on the owned default keeps its renewal
	// policy: the next execution still renews to 300 s (VAL-7).
	owned := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{"timeout": 300})).String("sandbox_id")
	s.expectRejected(ctx, "set_sandbox_timeout", []boundsCase{
		validArgs{}.valueCase("timeout", "max+1", 86401),
		validArgs{"sandbox_id": owned}.valueCase("timeout", "min-1", 0),
	})
	tc.Fake.Journal().Reset()
	tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "echo zq-bounds"}))
	var renewals []string
	for _, e := range tc.Fake.Journal().Calls(sandbox.OpSetTimeout) {
		renewals = append(renewals, strings.Join(strings.Fields(string(e.Body)), ""))
	}
	gomega.Expect(renewals).To(gomega.ContainElement(gomega.ContainSubstring(`"timeout":300`)),
		"after rejected set_sandbox_timeout calls the renewal must still be 300 s")
}

func specBoundsCreateSandbox(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	base := validArgs{}
	var cs []boundsCase
	cs = append(cs, base.integerCases("timeout", 1, 86400)...)
	cs = append(cs, base.integerCases("cpu", 1, tc.advertisedMax("create_sandbox", "cpu"))...)
	cs = append(cs, base.integerCases("memory", 1, tc.advertisedMax("create_sandbox", "memory"))...)
	cs = append(cs, base.envsCases()...)
	cs = append(cs, base.stringCases("template")...)
	cs = append(cs, base.stringCases("region")...)
	cs = append(cs, base.stringCases("provider")...)
	cs = append(cs, base.valueCase("provider", "unconfigured", boundsUnconfiguredProvider))
	cs = append(cs, base.unknownCases(append(boundsLifecycleUnknown, "metadata", "secure")...)...)
	s.expectRejected(ctx, "create_sandbox", cs)
	s.expectUnchanged(ctx, 0, "")
	// With a default: a rejected create keeps it.
	first := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{"timeout": 1})).String("sandbox_id")
	s.expectRejected(ctx, "create_sandbox", []boundsCase{
		base.valueCase("timeout", "max+1", 86401),
		base.valueCase("cpu", "zero", 0),
		base.unknownCases("team")[0],
	})
	s.expectUnchanged(ctx, 1, first)
	s.expectAccepted(ctx, "create_sandbox", map[string]any{"timeout": 86400})
}

// boundsExecFileSpecs are the bounds of the execution and file tools.
func boundsExecFileSpecs() []Spec {
	return []Spec{
		boundsDataPlaneSpec("run_command", "EXEC-1", "a missing or non-string command, a timeout outside 1-3600, malformed envs",
			"timeouts 1 and 3600", boundsDataPlane("run_command", runCommandBounds, runCommandEdges)),
		boundsDataPlaneSpec("run_code", "EXEC-2", "a missing or non-string code, a language outside python/javascript/bash, a timeout outside 1-3600",
			"timeouts 1 and 3600", boundsDataPlane("run_code", runCodeBounds, runCodeEdges)),
		boundsDataPlaneSpec("read_file", "FILE-2", "a missing or non-string path",
			"", boundsDataPlane("read_file", readFileBounds, nil)),
		boundsDataPlaneSpec("write_file", "FILE-1", "a missing or non-string path or content",
			"", boundsDataPlane("write_file", writeFileBounds, nil)),
		boundsDataPlaneSpec("list_files", "FILE-3", "a missing path, a depth outside 1-10 or not an integer",
			"depths 1 and 10", boundsDataPlane("list_files", listFilesBounds, listFilesEdges)),
	}
}

// boundsBackgroundBinarySpecs are the bounds of the background and binary transfer tools.
func boundsBackgroundBinarySpecs() []Spec {
	return []Spec{
		boundsDataPlaneSpec("start_background_command", "BG-1", "a missing or non-string command, malformed envs",
			"", boundsDataPlane("start_background_command", startBackgroundCommandBounds, nil)),
		{ID: "bounds.get-background-command", Rules: []string{"BG-2", "VAL-1", "VAL-2", "VAL-4", "VAL-6", "VAL-7"}, Tools: []string{"start_background_command", "get_background_command"}, Body: specBoundsGetBackgroundCommand,
			Title: "get_background_command rejects a missing command_id, a max_bytes below 1, above its cap or not an integer, a non-string cursor and undefined arguments without any platform call, and accepts max_bytes 1 and the cap"},
		{ID: "bounds.kill-background-command", Rules: []string{"BG-3", "VAL-4", "VAL-6", "VAL-7"}, Tools: []string{"start_background_command", "kill_background_command"}, Body: specBoundsKillBackgroundCommand,
			Title: "kill_background_command rejects a missing command_id, a signal other than SIGTERM or SIGKILL, wrong types and undefined arguments without any platform call, and accepts both signals"},
		boundsDataPlaneSpec("upload_file", "BIN-1", "data_base64 that is not strict standard base64 (bad length, padding, alphabet, whitespace, non-zero trailing bits), missing or non-string arguments",
			"", boundsDataPlane("upload_file", uploadFileBounds, nil)),
		boundsDataPlaneSpec("download_file", "BIN-2", "a missing path, a max_bytes below 1, above its cap or not an integer",
			"max_bytes 1 and the cap", specBoundsDownloadFile),
	}
}

func specBoundsGetBackgroundCommand(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	id := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "echo zq-bounds"})).String("command_id")
	base := validArgs{"command_id": id}
	capBytes := tc.advertisedMax("get_background_command", "max_bytes")
	cs := base.missingCases("command_id")
	cs = append(cs, base.stringCases("command_id")...)
	cs = append(cs, base.integerCases("max_bytes", 1, capBytes)...)
	cs = append(cs, base.valueCase("cursor", "number", boundsBaitInt), base.valueCase("cursor", "boolean", true))
	cs = append(cs, base.unknownCases("sandbox_id", "team")...)
	s.expectRejected(ctx, "get_background_command", cs)
	accept := []map[string]any{base.with("max_bytes", 1)}
	if capBytes > 0 {
		accept = append(accept, base.with("max_bytes", capBytes))
	}
	s.expectAccepted(ctx, "get_background_command", accept...)
}

func specBoundsKillBackgroundCommand(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	var ids []string
	for range 2 {
		r := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "sleep 60"}))
		ids = append(ids, r.String("command_id"))
	}
	base := validArgs{"command_id": ids[0]}
	cs := base.missingCases("command_id")
	cs = append(cs, base.stringCases("command_id")...)
	cs = append(cs, base.enumCases("signal", "SIGHUP", "SIGINT", "9")...)
	cs = append(cs, base.unknownCases("sandbox_id", "team")...)
	s.expectRejected(ctx, "kill_background_command", cs)
	s.expectAccepted(ctx, "kill_background_command", map[string]any{"command_id": ids[0], "signal": "SIGTERM"}, map[string]any{"command_id": ids[1], "signal": "SIGKILL"})
}

func specBoundsDownloadFile(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	base := validArgs{"path": errsReadablePath}
	capBytes := tc.advertisedMax("download_file", "max_bytes")
	cs := base.missingCases("path")
	cs = append(cs, base.stringCases("path")...)
	cs = append(cs, base.integerCases("max_bytes", 1, capBytes)...)
	cs = append(cs, base.sandboxIDCases()...)
	cs = append(cs, base.unknownCases("offset", "team")...)
	s.expectRejected(ctx, "download_file", cs)
	s.expectUnchanged(ctx, 0, "")
	accept := []map[string]any{base.with("max_bytes", 1)}
	if capBytes > 0 {
		accept = append(accept, base.with("max_bytes", capBytes))
	}
	s.expectAccepted(ctx, "download_file", accept...)
}

// runCommandBounds are run_command's invalid calls.
func runCommandBounds(*TestContext) []boundsCase {
	base := validArgs{"command": "echo zq-bounds"}
	cs := base.missingCases("command")
	cs = append(cs, base.stringCases("command")...)
	cs = append(cs, base.integerCases("timeout", 1, 3600)...)
	cs = append(cs, base.stringCases("cwd")...)
	cs = append(cs, base.envsCases()...)
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("shell", "team")...)
}

// runCommandEdges are run_command's edge values it must accept.
func runCommandEdges(*TestContext) []map[string]any {
	return []map[string]any{{"command": "echo zq-bounds", "timeout": 1}, {"command": "echo zq-bounds", "timeout": 3600}}
}

// runCodeBounds are run_code's invalid calls.
func runCodeBounds(*TestContext) []boundsCase {
	base := validArgs{"code": "echo zq-bounds", "language": "bash"}
	cs := base.missingCases("code")
	cs = append(cs, base.stringCases("code")...)
	cs = append(cs, base.enumCases("language", "ruby", "python3")...)
	cs = append(cs, base.integerCases("timeout", 1, 3600)...)
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("interpreter", "team")...)
}

// runCodeEdges are run_code's edge values it must accept.
func runCodeEdges(*TestContext) []map[string]any {
	return []map[string]any{
		{"code": "echo zq-bounds", "language": "bash", "timeout": 1},
		{"code": "echo zq-bounds", "language": "bash", "timeout": 3600},
	}
}

// readFileBounds are read_file's invalid calls.
func readFileBounds(*TestContext) []boundsCase {
	base := validArgs{"path": "/tmp/zq-bounds.txt"}
	cs := base.missingCases("path")
	cs = append(cs, base.stringCases("path")...)
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("encoding", "team")...)
}

// writeFileBounds are write_file's invalid calls.
func writeFileBounds(*TestContext) []boundsCase {
	base := validArgs{"path": "/tmp/zq-bounds.txt", "content": "zq-bounds"}
	cs := base.missingCases("path", "content")
	cs = append(cs, base.stringCases("path")...)
	cs = append(cs, base.stringCases("content")...)
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("mode", "team")...)
}

// listFilesBounds are list_files's invalid calls.
func listFilesBounds(*TestContext) []boundsCase {
	base := validArgs{"path": "/tmp"}
	cs := base.missingCases("path")
	cs = append(cs, base.stringCases("path")...)
	cs = append(cs, base.integerCases("depth", 1, 10)...)
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("recursive", "team")...)
}

// listFilesEdges are list_files's edge values it must accept.
func listFilesEdges(*TestContext) []map[string]any {
	return []map[string]any{{"path": "/tmp", "depth": 1}, {"path": "/tmp", "depth": 10}}
}

// startBackgroundCommandBounds are start_background_command's invalid calls.
func startBackgroundCommandBounds(*TestContext) []boundsCase {
	base := validArgs{"command": "echo zq-bounds"}
	cs := base.missingCases("command")
	cs = append(cs, base.stringCases("command")...)
	cs = append(cs, base.stringCases("cwd")...)
	cs = append(cs, base.envsCases()...)
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("timeout", "team")...)
}

// uploadFileBounds are upload_file's invalid calls.
func uploadFileBounds(*TestContext) []boundsCase {
	base := validArgs{"path": "/tmp/zq-bounds.bin", "data_base64": "enEtYm91bmRz"}
	cs := base.missingCases("path", "data_base64")
	cs = append(cs, base.stringCases("path")...)
	cs = append(cs, base.stringCases("data_base64")...)
	for _, bad := range []struct{ name, v string }{
		{"length", "zqsecret9913x"},
		{"alphabet", "zqsecret9913$$$$"},
		{"url-safe", "zqsecret9913-_AA"},
		{"space", "zqsecret 9913AAA"},
		{"newline", "zqsecret\n9913AAA"},
		{"inner-padding", "zqsecret9913A=A="},
		{"over-padding", "zqsecret9913===="},
		{"trailing-bits", "zqsecret9913RB=="},
		{"unpadded", "zqsecret9913RB"},
	} {
		cs = append(cs, boundsCase{name: "data_base64 " + bad.name, args: base.with("data_base64", bad.v),
			field: "data_base64", bait: []string{"zqsecret", "9913"}})
	}
	cs = append(cs, base.sandboxIDCases()...)
	return append(cs, base.unknownCases("mode", "team")...)
}

// emptyIDCalls are valid calls of every tool that takes sandbox_id, with
// sandbox_id explicitly empty: each must be rejected, also when the session
// has a default that "" could be mistaken for (VAL-3).
var emptyIDCalls = []struct {
	tool string
	args map[string]any
}{
	{"get_sandbox", map[string]any{}},
	{"kill_sandbox", map[string]any{}},
	{"set_sandbox_timeout", map[string]any{"timeout": 600}},
	{"run_command", map[string]any{"command": "echo val3"}},
	{"run_code", map[string]any{"code": "echo val3", "language": "bash"}},
	{"read_file", map[string]any{"path": "/home/user/val3.txt"}},
	{"write_file", map[string]any{"path": "/home/user/val3.txt", "content": "val3"}},
	{"list_files", map[string]any{"path": "/home/user"}},
	{"start_background_command", map[string]any{"command": "sleep 30"}},
	{"upload_file", map[string]any{"path": "/home/user/val3.bin", "data_base64": "dmFsMw=="}},
	{"download_file", map[string]any{"path": "/home/user/val3.bin"}},
}

func boundsWithDefaultSpecs() []Spec {
	return []Spec{
		{ID: "bounds.empty-id-with-default", Rules: []string{"VAL-3", "VAL-6", "VAL-7"}, Tools: []string{"create_sandbox", "get_sandbox"}, Body: specEmptyIDWithDefault,
			Title: `with a default sandbox present, every tool given sandbox_id "" is an invalid_argument error naming sandbox_id, makes no platform request, and leaves the default as it was (alive, still the default, its end time unchanged)`},
	}
}

func specEmptyIDWithDefault(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	def := s.mustCreate(ctx, nil)
	before, _ := tc.Fake.Sandbox(def)
	tc.Clock.Advance(5 * time.Second) // a renewal by mistake would move endAt
	checked := 0
	for _, c := range emptyIDCalls {
		if tc.Advertised(c.tool) == nil {
			continue
		}
		checked++
		s.expectRejected(ctx, c.tool, []boundsCase{validArgs(c.args).valueCase("sandbox_id", "empty-with-default", "")})
	}
	gomega.Expect(checked).To(gomega.BeNumerically(">", 0), "no advertised tool takes sandbox_id")
	after, alive := tc.Fake.Sandbox(def)
	gomega.Expect(alive).To(gomega.BeTrue(), `a call with sandbox_id "" destroyed the default sandbox`)
	gomega.Expect(after.EndAt).To(gomega.BeTemporally("==", before.EndAt),
		`a call with sandbox_id "" changed the default sandbox's end time (it was taken for the default)`)
	s.expectUnchanged(ctx, 1, def)
}
