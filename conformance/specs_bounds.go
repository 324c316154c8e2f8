package conformance

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

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

// boundsSet returns base with key set to v.
func boundsSet(base map[string]any, key string, v any) map[string]any {
	out := make(map[string]any, len(base)+1)
	for k, x := range base {
		out[k] = x
	}
	out[key] = v
	return out
}

// boundsDel returns base without key.
func boundsDel(base map[string]any, key string) map[string]any {
	out := make(map[string]any, len(base))
	for k, x := range base {
		if k != key {
			out[k] = x
		}
	}
	return out
}

// boundsBaitOf returns the text of a submitted value when it is distinctive
// enough that its presence in a result can only be an echo.
func boundsBaitOf(v any) []string {
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

// boundsValue is one rejected value of a field.
func boundsValue(base map[string]any, field, name string, v any) boundsCase {
	return boundsCase{name: field + "=" + name, args: boundsSet(base, field, v), field: field, bait: boundsBaitOf(v)}
}

// boundsInteger returns the cases of an integer argument bounded by
// [min, max]; max < 0 means the contract and the schema give no maximum.
func boundsInteger(base map[string]any, field string, min, max int) []boundsCase {
	cs := []boundsCase{
		boundsValue(base, field, "min-1", min-1),
		boundsValue(base, field, "boolean", true),
		boundsValue(base, field, "string", boundsBait),
		boundsValue(base, field, "numeric-string", "7731"),
		boundsValue(base, field, "fraction", boundsBaitFloat),
		boundsValue(base, field, "fraction-in-range", float64(min)+0.5),
		boundsValue(base, field, "null", nil),
		boundsValue(base, field, "object", map[string]any{"n": boundsBait}),
	}
	if min > boundsBaitNeg {
		cs = append(cs, boundsValue(base, field, "negative", boundsBaitNeg))
	}
	if max >= 0 {
		cs = append(cs, boundsValue(base, field, "max+1", max+1))
		if max < boundsBaitHuge {
			cs = append(cs, boundsValue(base, field, "far-above", boundsBaitHuge))
		}
	}
	return cs
}

// boundsString returns the wrong-type cases of a string argument.
func boundsString(base map[string]any, field string) []boundsCase {
	return []boundsCase{
		boundsValue(base, field, "number", boundsBaitInt),
		boundsValue(base, field, "boolean", true),
		boundsValue(base, field, "null", nil),
		boundsValue(base, field, "array", []any{boundsBait}),
	}
}

// boundsSandboxID returns the cases of sandbox_id: explicitly empty (VAL-3)
// and wrong types.
func boundsSandboxID(base map[string]any) []boundsCase {
	return append([]boundsCase{
		boundsValue(base, "sandbox_id", "empty", ""),
		boundsValue(base, "sandbox_id", "unconfigured-provider", boundsUnconfiguredProvider+":zqsandbox9913"),
	}, boundsString(base, "sandbox_id")...)
}

// boundsUnconfiguredProvider is a provider ID no server configures.
const boundsUnconfiguredProvider = "zqnoprovider9913"

// boundsEnvs returns the cases of an envs argument (VAL-5): not an object,
// and values that are not strings.
func boundsEnvs(base map[string]any) []boundsCase {
	return []boundsCase{
		boundsValue(base, "envs", "array", []any{"ZQ_A=" + boundsBait}),
		boundsValue(base, "envs", "string", "ZQ_A="+boundsBait),
		boundsValue(base, "envs", "number", boundsBaitInt),
		boundsValue(base, "envs", "boolean", true),
		boundsValue(base, "envs", "null", nil),
		{name: "envs.value=number", args: boundsSet(base, "envs", map[string]any{"ZQ_A": boundsBaitInt}), field: "envs", bait: []string{"987654"}},
		{name: "envs.value=boolean", args: boundsSet(base, "envs", map[string]any{"ZQ_A": true}), field: "envs"},
		{name: "envs.value=null", args: boundsSet(base, "envs", map[string]any{"ZQ_A": nil}), field: "envs"},
		{name: "envs.value=object", args: boundsSet(base, "envs", map[string]any{"ZQ_A": map[string]any{"v": boundsBait}}), field: "envs", bait: []string{boundsBait}},
		{name: "envs.value=array", args: boundsSet(base, "envs", map[string]any{"ZQ_A": []any{boundsBait}}), field: "envs", bait: []string{boundsBait}},
	}
}

// boundsMissing returns one case per required argument left out.
func boundsMissing(base map[string]any, required ...string) []boundsCase {
	var cs []boundsCase
	for _, f := range required {
		cs = append(cs, boundsCase{name: "missing " + f, args: boundsDel(base, f), field: f})
	}
	return cs
}

// boundsUnknown returns one case per argument the tool does not define
// (VAL-4), each with a distinctive value.
func boundsUnknown(base map[string]any, names ...string) []boundsCase {
	var cs []boundsCase
	for _, n := range names {
		cs = append(cs, boundsCase{name: "unknown " + n, args: boundsSet(base, n, boundsBait), field: n, bait: []string{boundsBait}})
	}
	return cs
}

// boundsEnum returns values outside an enum.
func boundsEnum(base map[string]any, field string, bad ...string) []boundsCase {
	cs := []boundsCase{boundsValue(base, field, "not-in-enum", boundsBait)}
	for _, b := range bad {
		cs = append(cs, boundsValue(base, field, strconv.Quote(b), b))
	}
	return append(cs, boundsValue(base, field, "number", boundsBaitInt), boundsValue(base, field, "null", nil))
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

// boundsAdvertisedMax returns the maximum the server advertises for a
// tool's integer argument, or -1. The kit tests max+1 against it for the
// bounds the contract leaves to the server ("capped").
func boundsAdvertisedMax(tc *TestContext, tool, field string) int {
	props, _ := advertisedProps(tc, tool)
	p, _ := props[field].(map[string]any)
	if m, ok := p["maximum"].(float64); ok && m == math.Trunc(m) && m < 1<<52 {
		return int(m)
	}
	return -1
}

// boundsApplicable drops the cases that give a wrong value to an argument
// the tool does not advertise: rejecting it is VAL-4's business, checked by
// the "unknown" cases, not a bound the tool has. A tool without an
// advertised schema keeps every case.
func boundsApplicable(tc *TestContext, tool string, cases []boundsCase) []boundsCase {
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
				out[i].args = boundsDel(out[i].args, k)
			}
		}
	}
	return out
}

// boundsReject makes every call of cases and checks each rejection: a tool
// error of category invalid_argument naming the field, holding no bait,
// and no request to the fake at all (VAL-6, VAL-7). It reports every
// failing case at once.
func boundsReject(ctx context.Context, tc *TestContext, s *Session, tool string, cases []boundsCase) {
	ginkgo.GinkgoHelper()
	cases = boundsApplicable(tc, tool, cases)
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
			problems = append(problems, fmt.Sprintf("%s %s: %s", tool, c.name, errsOneLine(msgs[0])))
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

// boundsAccept checks that each argument set is accepted.
func boundsAccept(ctx context.Context, tc *TestContext, s *Session, tool string, argSets ...map[string]any) {
	ginkgo.GinkgoHelper()
	for _, a := range argSets {
		r := s.Call(ctx, tool, a)
		gomega.Expect(r.IsError).To(gomega.BeFalse(), "%s %s: a valid edge was rejected: %s", tool, argsText(a), truncate(r.JSON, 300))
		tc.ExpectSuccess(r)
	}
}

// boundsExpectUnchanged checks that rejected calls left the session and the
// platform as they were (VAL-7): no sandbox beyond want live, and
// get_sandbox without sandbox_id still answers as before: a tool error
// with no platform call when there was no default, else the default's ID.
func boundsExpectUnchanged(ctx context.Context, tc *TestContext, s *Session, live int, defaultID string) {
	ginkgo.GinkgoHelper()
	live += s.kitSandbox(ctx, "")
	gomega.Expect(tc.Fake.LiveCount()).To(gomega.Equal(live), "rejected calls created a sandbox")
	if tc.Advertised("get_sandbox") == nil || (defaultID == "" && tc.Config.Profile != ProfileContract && tc.Config.Profile != "") {
		// Without a default (GET-2) only a contract server must refuse.
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

// boundsSpec builds one spec of the family.
func boundsSpec(id, title string, rules []string, tools []string, body func(ctx context.Context, tc *TestContext)) Spec {
	return Spec{ID: id, Title: title, Family: FamilyBounds, Rules: rules, Tools: tools, NeedsFake: true, Body: body}
}

// boundsLifecycleUnknown are the arguments the lifecycle tools must refuse
// (VAL-4, CREATE-4).
var boundsLifecycleUnknown = []string{"team", "sandbox_domain", "api_key"}

// boundsDataPlane builds the spec of a data-plane tool: its rejections in
// a fresh session (no implicit sandbox may be created), then accepted
// edges.
func boundsDataPlane(id, tool, title string, rules []string, cases func(tc *TestContext) []boundsCase, accept func(tc *TestContext) []map[string]any) Spec {
	return boundsSpec(id, title, rules, []string{tool}, func(ctx context.Context, tc *TestContext) {
		s := tc.Connect(ctx)
		boundsReject(ctx, tc, s, tool, cases(tc))
		boundsExpectUnchanged(ctx, tc, s, 0, "")
		if accept != nil {
			boundsAccept(ctx, tc, s, tool, accept(tc)...)
		}
	})
}

func boundsSpecs() []Spec {
	return []Spec{
		boundsSpec("bounds.list-sandboxes",
			"list_sandboxes rejects a limit outside 1-100, a negative or over-cap offset, a status outside running/paused, wrong types and undefined arguments, without any platform call, and accepts the edges",
			[]string{"LIST-3", "VAL-1", "VAL-2", "VAL-4", "VAL-6", "VAL-7"}, []string{"list_sandboxes"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				base := map[string]any{}
				offMax := boundsAdvertisedMax(tc, "list_sandboxes", "offset")
				var cs []boundsCase
				cs = append(cs, boundsInteger(base, "limit", 1, 100)...)
				cs = append(cs, boundsInteger(base, "offset", 0, offMax)...)
				cs = append(cs, boundsEnum(base, "status", "killed", "pausing")...)
				cs = append(cs, boundsString(base, "provider")...)
				cs = append(cs, boundsValue(base, "provider", "unconfigured", boundsUnconfiguredProvider))
				cs = append(cs, boundsString(base, "region")...)
				cs = append(cs, boundsUnknown(base, append(boundsLifecycleUnknown, "cursor", "next_token")...)...)
				boundsReject(ctx, tc, s, "list_sandboxes", cs)
				boundsExpectUnchanged(ctx, tc, s, 0, "")
				accept := []map[string]any{{"limit": 1}, {"limit": 100}, {"offset": 0}, {"status": "running"}, {"status": "paused"}}
				if offMax >= 0 {
					accept = append(accept, map[string]any{"offset": offMax})
				}
				boundsAccept(ctx, tc, s, "list_sandboxes", accept...)
			}),
		boundsSpec("bounds.get-sandbox",
			"get_sandbox rejects an explicitly empty or non-string sandbox_id and undefined arguments (team, sandbox_domain) without any platform call, and without a default still fails with no call",
			[]string{"VAL-3", "VAL-4", "VAL-6", "VAL-7", "GET-2"}, []string{"get_sandbox"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				base := map[string]any{}
				cs := boundsSandboxID(base)
				cs = append(cs, boundsUnknown(base, append(boundsLifecycleUnknown, "region", "provider")...)...)
				boundsReject(ctx, tc, s, "get_sandbox", cs)
				boundsExpectUnchanged(ctx, tc, s, 0, "")
			}),
		boundsSpec("bounds.kill-sandbox",
			"kill_sandbox rejects an explicitly empty or non-string sandbox_id and undefined arguments (team, sandbox_domain) without any platform call or kill",
			[]string{"VAL-3", "VAL-4", "VAL-6", "VAL-7"}, []string{"kill_sandbox"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				victim := tc.Seed(fakeprovider.SandboxSeed{})
				base := map[string]any{}
				cs := boundsSandboxID(base)
				// An undefined argument next to a real sandbox_id must not kill it.
				cs = append(cs, boundsUnknown(map[string]any{"sandbox_id": victim}, append(boundsLifecycleUnknown, "region", "provider")...)...)
				boundsReject(ctx, tc, s, "kill_sandbox", cs)
				_, alive := tc.Fake.Sandbox(victim)
				gomega.Expect(alive).To(gomega.BeTrue(), "a rejected kill_sandbox killed the sandbox")
				boundsExpectUnchanged(ctx, tc, s, 1, "")
			}),
		boundsSpec("bounds.set-sandbox-timeout",
			"set_sandbox_timeout requires an integer timeout of 1-86400 and a non-empty sandbox_id, rejecting everything else without any platform call or change of the renewal policy, and accepts 1 and 86400",
			[]string{"TIMEOUT-1", "VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"}, []string{"set_sandbox_timeout"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				ext := tc.Seed(fakeprovider.SandboxSeed{})
				base := map[string]any{"sandbox_id": ext, "timeout": 600}
				var cs []boundsCase
				cs = append(cs, boundsMissing(base, "timeout")...)
				cs = append(cs, boundsMissing(map[string]any{}, "timeout")...)
				cs = append(cs, boundsInteger(base, "timeout", 1, 86400)...)
				cs = append(cs, boundsSandboxID(base)...)
				cs = append(cs, boundsUnknown(base, boundsLifecycleUnknown...)...)
				boundsReject(ctx, tc, s, "set_sandbox_timeout", cs)
				boundsExpectUnchanged(ctx, tc, s, 1, "")
				boundsAccept(ctx, tc, s, "set_sandbox_timeout",
					map[string]any{"sandbox_id": ext, "timeout": 1}, map[string]any{"sandbox_id": ext, "timeout": 86400})
				if tc.Advertised("create_sandbox") == nil || tc.Advertised("run_command") == nil {
					return
				}
				// A rejected call on the owned default keeps its renewal
				// policy: the next execution still renews to 300 s (VAL-7).
				owned := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{"timeout": 300})).String("sandbox_id")
				boundsReject(ctx, tc, s, "set_sandbox_timeout", []boundsCase{
					boundsValue(map[string]any{}, "timeout", "max+1", 86401),
					boundsValue(map[string]any{"sandbox_id": owned}, "timeout", "min-1", 0),
				})
				tc.Fake.Journal().Reset()
				tc.ExpectSuccess(s.Call(ctx, "run_command", map[string]any{"command": "echo zq-bounds"}))
				var renewals []string
				for _, e := range tc.Fake.Journal().Calls(sandbox.OpSetTimeout) {
					renewals = append(renewals, strings.Join(strings.Fields(string(e.Body)), ""))
				}
				gomega.Expect(renewals).To(gomega.ContainElement(gomega.ContainSubstring(`"timeout":300`)),
					"after rejected set_sandbox_timeout calls the renewal must still be 300 s")
			}),
		boundsSpec("bounds.create-sandbox",
			"create_sandbox rejects a timeout outside 1-86400, non-positive or non-integer cpu and memory, non-object envs or non-string env values, wrong types and undefined arguments such as team, without any platform call, creation or change of the default, and accepts timeouts 1 and 86400",
			[]string{"CREATE-1", "CREATE-4", "VAL-1", "VAL-2", "VAL-4", "VAL-5", "VAL-6", "VAL-7"}, []string{"create_sandbox"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				base := map[string]any{}
				var cs []boundsCase
				cs = append(cs, boundsInteger(base, "timeout", 1, 86400)...)
				cs = append(cs, boundsInteger(base, "cpu", 1, boundsAdvertisedMax(tc, "create_sandbox", "cpu"))...)
				cs = append(cs, boundsInteger(base, "memory", 1, boundsAdvertisedMax(tc, "create_sandbox", "memory"))...)
				cs = append(cs, boundsEnvs(base)...)
				cs = append(cs, boundsString(base, "template")...)
				cs = append(cs, boundsString(base, "region")...)
				cs = append(cs, boundsString(base, "provider")...)
				cs = append(cs, boundsValue(base, "provider", "unconfigured", boundsUnconfiguredProvider))
				cs = append(cs, boundsUnknown(base, append(boundsLifecycleUnknown, "metadata", "secure")...)...)
				boundsReject(ctx, tc, s, "create_sandbox", cs)
				boundsExpectUnchanged(ctx, tc, s, 0, "")
				// With a default: a rejected create keeps it.
				first := tc.ExpectSuccess(s.Call(ctx, "create_sandbox", map[string]any{"timeout": 1})).String("sandbox_id")
				boundsReject(ctx, tc, s, "create_sandbox", []boundsCase{
					boundsValue(base, "timeout", "max+1", 86401),
					boundsValue(base, "cpu", "zero", 0),
					boundsUnknown(base, "team")[0],
				})
				boundsExpectUnchanged(ctx, tc, s, 1, first)
				boundsAccept(ctx, tc, s, "create_sandbox", map[string]any{"timeout": 86400})
			}),
		boundsDataPlane("bounds.run-command", "run_command",
			"run_command rejects a missing or non-string command, a timeout outside 1-3600, malformed envs, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox, and accepts timeouts 1 and 3600",
			[]string{"EXEC-1", "VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"command": "echo zq-bounds"}
				cs := boundsMissing(base, "command")
				cs = append(cs, boundsString(base, "command")...)
				cs = append(cs, boundsInteger(base, "timeout", 1, 3600)...)
				cs = append(cs, boundsString(base, "cwd")...)
				cs = append(cs, boundsEnvs(base)...)
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "shell", "team")...)
			},
			func(*TestContext) []map[string]any {
				return []map[string]any{{"command": "echo zq-bounds", "timeout": 1}, {"command": "echo zq-bounds", "timeout": 3600}}
			}),
		boundsDataPlane("bounds.run-code", "run_code",
			"run_code rejects a missing or non-string code, a language outside python/javascript/bash, a timeout outside 1-3600, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox, and accepts timeouts 1 and 3600",
			[]string{"EXEC-2", "VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"code": "echo zq-bounds", "language": "bash"}
				cs := boundsMissing(base, "code")
				cs = append(cs, boundsString(base, "code")...)
				cs = append(cs, boundsEnum(base, "language", "ruby", "python3")...)
				cs = append(cs, boundsInteger(base, "timeout", 1, 3600)...)
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "interpreter", "team")...)
			},
			func(*TestContext) []map[string]any {
				return []map[string]any{
					{"code": "echo zq-bounds", "language": "bash", "timeout": 1},
					{"code": "echo zq-bounds", "language": "bash", "timeout": 3600},
				}
			}),
		boundsDataPlane("bounds.read-file", "read_file",
			"read_file rejects a missing or non-string path, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox",
			[]string{"FILE-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"path": "/tmp/zq-bounds.txt"}
				cs := boundsMissing(base, "path")
				cs = append(cs, boundsString(base, "path")...)
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "encoding", "team")...)
			}, nil),
		boundsDataPlane("bounds.write-file", "write_file",
			"write_file rejects a missing or non-string path or content, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox",
			[]string{"FILE-1", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"path": "/tmp/zq-bounds.txt", "content": "zq-bounds"}
				cs := boundsMissing(base, "path", "content")
				cs = append(cs, boundsString(base, "path")...)
				cs = append(cs, boundsString(base, "content")...)
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "mode", "team")...)
			}, nil),
		boundsDataPlane("bounds.list-files", "list_files",
			"list_files rejects a missing path, a depth outside 1-10 or not an integer, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox, and accepts depths 1 and 10",
			[]string{"FILE-3", "VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"path": "/tmp"}
				cs := boundsMissing(base, "path")
				cs = append(cs, boundsString(base, "path")...)
				cs = append(cs, boundsInteger(base, "depth", 1, 10)...)
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "recursive", "team")...)
			},
			func(*TestContext) []map[string]any {
				return []map[string]any{{"path": "/tmp", "depth": 1}, {"path": "/tmp", "depth": 10}}
			}),
		boundsDataPlane("bounds.start-background-command", "start_background_command",
			"start_background_command rejects a missing or non-string command, malformed envs, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox",
			[]string{"BG-1", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"command": "echo zq-bounds"}
				cs := boundsMissing(base, "command")
				cs = append(cs, boundsString(base, "command")...)
				cs = append(cs, boundsString(base, "cwd")...)
				cs = append(cs, boundsEnvs(base)...)
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "timeout", "team")...)
			}, nil),
		boundsSpec("bounds.get-background-command",
			"get_background_command rejects a missing command_id, a max_bytes below 1, above its cap or not an integer, a non-string cursor and undefined arguments without any platform call, and accepts max_bytes 1 and the cap",
			[]string{"BG-2", "VAL-1", "VAL-2", "VAL-4", "VAL-6", "VAL-7"}, []string{"start_background_command", "get_background_command"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				id := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "echo zq-bounds"})).String("command_id")
				base := map[string]any{"command_id": id}
				capBytes := boundsAdvertisedMax(tc, "get_background_command", "max_bytes")
				cs := boundsMissing(base, "command_id")
				cs = append(cs, boundsString(base, "command_id")...)
				cs = append(cs, boundsInteger(base, "max_bytes", 1, capBytes)...)
				cs = append(cs, boundsValue(base, "cursor", "number", boundsBaitInt), boundsValue(base, "cursor", "boolean", true))
				cs = append(cs, boundsUnknown(base, "sandbox_id", "team")...)
				boundsReject(ctx, tc, s, "get_background_command", cs)
				accept := []map[string]any{boundsSet(base, "max_bytes", 1)}
				if capBytes > 0 {
					accept = append(accept, boundsSet(base, "max_bytes", capBytes))
				}
				boundsAccept(ctx, tc, s, "get_background_command", accept...)
			}),
		boundsSpec("bounds.kill-background-command",
			"kill_background_command rejects a missing command_id, a signal other than SIGTERM or SIGKILL, wrong types and undefined arguments without any platform call, and accepts both signals",
			[]string{"BG-3", "VAL-4", "VAL-6", "VAL-7"}, []string{"start_background_command", "kill_background_command"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				var ids []string
				for range 2 {
					r := tc.ExpectSuccess(s.Call(ctx, "start_background_command", map[string]any{"command": "sleep 60"}))
					ids = append(ids, r.String("command_id"))
				}
				base := map[string]any{"command_id": ids[0]}
				cs := boundsMissing(base, "command_id")
				cs = append(cs, boundsString(base, "command_id")...)
				cs = append(cs, boundsEnum(base, "signal", "SIGHUP", "SIGINT", "9")...)
				cs = append(cs, boundsUnknown(base, "sandbox_id", "team")...)
				boundsReject(ctx, tc, s, "kill_background_command", cs)
				boundsAccept(ctx, tc, s, "kill_background_command",
					map[string]any{"command_id": ids[0], "signal": "SIGTERM"}, map[string]any{"command_id": ids[1], "signal": "SIGKILL"})
			}),
		boundsDataPlane("bounds.upload-file", "upload_file",
			"upload_file rejects data_base64 that is not strict standard base64 (bad length, padding, alphabet, whitespace, non-zero trailing bits), missing or non-string arguments, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox",
			[]string{"BIN-1", "VAL-3", "VAL-4", "VAL-6", "VAL-7"},
			func(*TestContext) []boundsCase {
				base := map[string]any{"path": "/tmp/zq-bounds.bin", "data_base64": "enEtYm91bmRz"}
				cs := boundsMissing(base, "path", "data_base64")
				cs = append(cs, boundsString(base, "path")...)
				cs = append(cs, boundsString(base, "data_base64")...)
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
					cs = append(cs, boundsCase{name: "data_base64 " + bad.name, args: boundsSet(base, "data_base64", bad.v),
						field: "data_base64", bait: []string{"zqsecret", "9913"}})
				}
				cs = append(cs, boundsSandboxID(base)...)
				return append(cs, boundsUnknown(base, "mode", "team")...)
			}, nil),
		boundsSpec("bounds.download-file",
			"download_file rejects a missing path, a max_bytes below 1, above its cap or not an integer, an empty sandbox_id and undefined arguments without any platform call or implicit sandbox, and accepts max_bytes 1 and the cap",
			[]string{"BIN-2", "VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-6", "VAL-7"}, []string{"download_file"},
			func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				base := map[string]any{"path": errsReadablePath}
				capBytes := boundsAdvertisedMax(tc, "download_file", "max_bytes")
				cs := boundsMissing(base, "path")
				cs = append(cs, boundsString(base, "path")...)
				cs = append(cs, boundsInteger(base, "max_bytes", 1, capBytes)...)
				cs = append(cs, boundsSandboxID(base)...)
				cs = append(cs, boundsUnknown(base, "offset", "team")...)
				boundsReject(ctx, tc, s, "download_file", cs)
				boundsExpectUnchanged(ctx, tc, s, 0, "")
				accept := []map[string]any{boundsSet(base, "max_bytes", 1)}
				if capBytes > 0 {
					accept = append(accept, boundsSet(base, "max_bytes", capBytes))
				}
				boundsAccept(ctx, tc, s, "download_file", accept...)
			}),
	}
}
