package conformance

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// The leakage family searches every tool result (r.JSON: text blocks,
// structuredContent and _meta) and the server's log for every secret the
// fake handed out (API key, access tokens, domains, client IDs, metadata
// and environment canaries, error messages, malformed bodies), for URLs and
// for stack traces: on success of every tool and under every fault kind
// (META-4, ERR-3, CREATE-6), and for submitted values of rejected calls
// (VAL-6). It also checks the shape of sandbox metadata (META-1, META-2,
// META-3, META-5).

// Distinctive values planted by the family.
const (
	leakMetaKey   = "zq-owner-7702"
	leakMetaValue = "zq-meta-secret-4471"
	leakEnvName   = "ZQ_SEEDED_5120"
	leakEnvValue  = "zq-env-secret-6693"
	leakArgEnv    = "ZQ_ARG_ENV_3318"
	leakArgValue  = "zq-arg-secret-5582"
	leakRawMsg    = "zq-raw-provider-msg-6620"
	leakRawHost   = "internal.zq-leak.test"
	leakValBait   = "zq-val-secret-3307"
)

// leakPlanted are the planted values no result or log line may hold:
// user metadata and environment variables (META-4) and the fake's own
// canary entries' names.
var leakPlanted = []string{leakMetaKey, leakMetaValue, leakEnvName, leakEnvValue, leakArgEnv, leakArgValue,
	fakeprovider.CanaryMetadataKey, fakeprovider.CanaryEnvVar, seedMarker}

func leakageSpecs() []Spec {
	return []Spec{
		{ID: "leakage.lifecycle-success", Rules: []string{"META-4", "CREATE-6", "ERR-3", "TOOLS-3"}, Tools: []string{"create_sandbox", "get_sandbox", "list_sandboxes", "set_sandbox_timeout", "kill_sandbox"}, Body: specLifecycleSuccess,
			Title: "create, get (owned and external), list, set_sandbox_timeout and kill_sandbox succeed with structuredContent valid against their output schemas, and neither their results nor the server's log hold a token, environment variable, user metadata, client ID, domain, API key, URL or stack trace"},
		{ID: "leakage.dataplane-success", Rules: []string{"META-4", "ERR-3", "TOOLS-3"}, Body: specDataplaneSuccess,
			Title: "every execution, file, background and binary tool succeeds on owned and external sandboxes with structuredContent valid against its output schema, and neither its result nor the server's log holds a secret of the fake, a URL or a stack trace"},
		{ID: "leakage.faults", Rules: []string{"ERR-3", "META-4"}, Body: specFaults,
			Title: "under every fault kind (each status with the fake's canary body or a body holding a raw message, an internal URL and a stack trace; a reset; a malformed body) on every tool's platform and daemon calls, no result and no log line holds any of them"},
		{ID: "leakage.validation-no-echo", Rules: []string{"VAL-6", "ERR-3"}, Body: specValidationNoEcho,
			Title: "a rejected call of every tool echoes no part of a distinctive submitted value, neither in its result nor in the server's log"},
		{ID: "leakage.metadata-shape", Rules: []string{"META-1", "META-2", "META-5", "CREATE-6"}, Tools: []string{"create_sandbox", "get_sandbox", "list_sandboxes"}, Body: specMetadataShape,
			Title: "create, get and list return metadata with exactly the nine keys, times in RFC 3339 UTC or null, and the bare sandbox_id of the default provider, which set_sandbox_timeout, kill_sandbox and start_background_command return bare too"},
		{ID: "leakage.metadata-unreported", Rules: []string{"META-3", "META-2", "META-1"}, Tools: []string{"get_sandbox", "list_sandboxes"}, Body: specMetadataUnreported,
			Title: "a resource or time the platform did not report is null in get and list results, never 0 or an empty string, and the nine keys stay"},
		{ID: "leakage.metadata-times-in-utc", Rules: []string{"META-2"}, Tools: []string{"get_sandbox", "list_sandboxes"}, Body: specMetadataTimesInUTC,
			Title: "times the platform writes with a UTC offset (+05:30, -08:00) come back from get_sandbox and list_sandboxes converted to UTC, the same instants"},
	}
}

func specLifecycleSuccess(ctx context.Context, tc *TestContext) {
	mark := len(tc.Logs())
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	ext := leakSeed(tc)
	r := leakCall(ctx, tc, c, s, "create_sandbox", "create_sandbox", map[string]any{"envs": map[string]any{leakArgEnv: leakArgValue}, "timeout": 600})
	owned := r.String("sandbox_id")
	leakCall(ctx, tc, c, s, "get_sandbox(owned)", "get_sandbox", map[string]any{})
	leakCall(ctx, tc, c, s, "get_sandbox(external)", "get_sandbox", map[string]any{"sandbox_id": ext})
	leakCall(ctx, tc, c, s, "list_sandboxes", "list_sandboxes", map[string]any{})
	leakCall(ctx, tc, c, s, "list_sandboxes(running)", "list_sandboxes", map[string]any{"status": "running", "limit": 100})
	leakCall(ctx, tc, c, s, "set_sandbox_timeout(owned)", "set_sandbox_timeout", map[string]any{"timeout": 900})
	leakCall(ctx, tc, c, s, "set_sandbox_timeout(external)", "set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 900})
	leakCall(ctx, tc, c, s, "kill_sandbox(external)", "kill_sandbox", map[string]any{"sandbox_id": ext})
	leakCall(ctx, tc, c, s, "kill_sandbox(owned)", "kill_sandbox", map[string]any{"sandbox_id": owned})
	leakLogScan(tc, c, mark, leakPlanted...)
	c.done()
	gomega.Expect(tc.Fake.Canaries()).NotTo(gomega.BeEmpty(), "the fake handed out no secret to look for")
}

func specDataplaneSuccess(ctx context.Context, tc *TestContext) {
	mark := len(tc.Logs())
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	ext := leakSeed(tc)
	ran := 0
	for _, where := range []map[string]any{{}, {"sandbox_id": ext}} {
		label := "owned"
		if len(where) > 0 {
			label = "external"
		}
		for _, dt := range errsDataTools {
			if tc.Advertised(dt.tool) == nil {
				continue
			}
			r := leakCall(ctx, tc, c, s, dt.tool+"("+label+")", dt.tool, leakDefined(tc, dt.tool, withArgs(dt.args, leakKV(where)...)))
			ran++
			if dt.tool != "start_background_command" || r.IsError {
				continue
			}
			id := map[string]any{"command_id": r.String("command_id")}
			if tc.Advertised("get_background_command") != nil {
				leakCall(ctx, tc, c, s, "get_background_command("+label+")", "get_background_command", id)
			}
			if tc.Advertised("kill_background_command") != nil {
				// Kill a command that is surely still running: the one
				// above may have finished already.
				long := leakCall(ctx, tc, c, s, "start_background_command("+label+", long)", "start_background_command",
					withArgs(map[string]any{"command": "sleep 30"}, leakKV(where)...))
				if !long.IsError {
					leakCall(ctx, tc, c, s, "kill_background_command("+label+")", "kill_background_command",
						map[string]any{"command_id": long.String("command_id")})
				}
			}
		}
	}
	if ran == 0 {
		ginkgo.Skip("the server advertises no data-plane tool")
	}
	leakLogScan(tc, c, mark, leakPlanted...)
	c.done()
}

func specFaults(ctx context.Context, tc *TestContext) {
	mark := len(tc.Logs())
	env := tc.newErrsEnv(ctx)
	c := newErrsChecker(tc)
	type fault struct {
		f    errsFault
		body string
	}
	var faults []fault
	for _, f := range errsFaults() {
		faults = append(faults, fault{f: f})
	}
	for _, st := range []int{404, 500} {
		for _, b := range leakBaitBodies(st) {
			faults = append(faults, fault{f: errsFault{name: fmt.Sprintf("status-%d-bait", st), status: st}, body: b})
		}
	}
	modes := append(append(errsPlatformModes(), errsEnvdFileModes()...), errsEnvdRPCModes()...)
	for _, m := range modes {
		if !env.usable(m) {
			continue
		}
		for _, k := range faults {
			args := m.args(env)
			h := k.f.injectMode(tc, m, k.body)
			r := env.s.Call(ctx, m.tool, args)
			h.Clear()
			label := m.name + " " + k.f.name
			c.faultHit(label, h, m.opsText(), r)
			if !(k.f.malformed && m.content) {
				// (A download's body is the file: a malformed one is content.)
				c.noLeak(label, r.JSON, leakRawMsg, leakRawHost)
			}
			if r.Err != nil {
				c.addf("%s: a protocol error in place of a tool error: %v", label, r.Err)
			}
			// The same call again, so that every sandbox is accounted for.
			again := env.s.Call(ctx, m.tool, args)
			c.noLeak(label+" (again)", again.JSON, leakRawMsg, leakRawHost)
		}
	}
	leakLogScan(tc, c, mark, leakRawMsg, leakRawHost)
	c.done()
}

func specValidationNoEcho(ctx context.Context, tc *TestContext) {
	mark := len(tc.Logs())
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	base := map[string]map[string]any{
		"create_sandbox": {}, "kill_sandbox": {}, "list_sandboxes": {}, "get_sandbox": {},
		"set_sandbox_timeout":      {"timeout": 600},
		"run_code":                 {"code": "echo zq"},
		"run_command":              {"command": "echo zq"},
		"read_file":                {"path": "/tmp/zq"},
		"write_file":               {"path": "/tmp/zq", "content": "zq"},
		"list_files":               {"path": "/tmp"},
		"start_background_command": {"command": "echo zq"},
		"get_background_command":   {"command_id": "bg-0123456789abcdef"},
		"kill_background_command":  {"command_id": "bg-0123456789abcdef"},
		"upload_file":              {"path": "/tmp/zq", "data_base64": "enE="},
		"download_file":            {"path": "/tmp/zq"},
	}
	// A wrong-typed value of a defined argument, per tool.
	wrong := map[string]struct {
		field string
		v     any
	}{
		"create_sandbox": {"timeout", leakValBait}, "kill_sandbox": {"sandbox_id", []any{leakValBait}},
		"list_sandboxes": {"limit", leakValBait}, "get_sandbox": {"sandbox_id", map[string]any{"id": leakValBait}},
		"set_sandbox_timeout": {"timeout", leakValBait}, "run_code": {"language", leakValBait},
		"run_command": {"timeout", leakValBait}, "read_file": {"path", []any{leakValBait}},
		"write_file": {"content", map[string]any{"text": leakValBait}}, "list_files": {"depth", leakValBait},
		"start_background_command": {"envs", map[string]any{"ZQ": []any{leakValBait}}},
		"get_background_command":   {"max_bytes", leakValBait}, "kill_background_command": {"signal", leakValBait},
		"upload_file": {"data_base64", "zqval" + "secret3307=="}, "download_file": {"max_bytes", leakValBait},
	}
	ran := 0
	for _, tool := range ContractTools() {
		if tc.Advertised(tool) == nil {
			continue
		}
		ran++
		w := wrong[tool]
		for label, args := range map[string]map[string]any{
			tool + " wrong " + w.field: withArgs(base[tool], w.field, w.v),
			tool + " unknown argument": withArgs(base[tool], "zq_extra", leakValBait),
		} {
			r := s.Call(ctx, tool, args)
			if msgs := gomega.InterceptGomegaFailures(func() { tc.ExpectToolError(r, "invalid_argument") }); len(msgs) > 0 {
				c.addf("%s: %s", label, failureLine(msgs[0]))
			}
			c.noLeak(label, r.JSON, leakValBait, "zqvalsecret", "3307")
		}
	}
	if ran == 0 {
		ginkgo.Skip("the server advertises no contract tool")
	}
	leakLogScan(tc, c, mark, leakValBait, "zqvalsecret")
	c.done()
}

func specMetadataShape(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	ext := leakSeed(tc)
	r := leakCall(ctx, tc, c, s, "create_sandbox", "create_sandbox", map[string]any{})
	owned := r.String("sandbox_id")
	_, live := tc.Fake.Sandbox(owned)
	gomega.Expect(live).To(gomega.BeTrue(), "create_sandbox's sandbox_id %q is not the platform's bare ID", owned)
	c.metadata("create_sandbox", r.Structured, owned)
	c.metadata("get_sandbox(owned)", leakCall(ctx, tc, c, s, "get_sandbox(owned)", "get_sandbox", map[string]any{}).Structured, owned)
	c.metadata("get_sandbox(external)", leakCall(ctx, tc, c, s, "get_sandbox(external)", "get_sandbox", map[string]any{"sandbox_id": ext}).Structured, ext)
	list := leakCall(ctx, tc, c, s, "list_sandboxes", "list_sandboxes", map[string]any{})
	for _, id := range []string{owned, ext} {
		if m := leakListed(list, id); m == nil {
			c.addf("list_sandboxes: no item with the bare sandbox_id %q", id)
		} else {
			c.metadata("list_sandboxes item", m, id)
		}
	}
	if tc.Advertised("set_sandbox_timeout") != nil {
		r := leakCall(ctx, tc, c, s, "set_sandbox_timeout", "set_sandbox_timeout", map[string]any{"sandbox_id": ext, "timeout": 600})
		if got := r.String("sandbox_id"); got != ext {
			c.addf("set_sandbox_timeout: sandbox_id %q, want %q", got, ext)
		}
	}
	if tc.Advertised("start_background_command") != nil {
		r := leakCall(ctx, tc, c, s, "start_background_command", "start_background_command", map[string]any{"command": "echo zq"})
		if got := r.String("sandbox_id"); got != owned {
			c.addf("start_background_command: sandbox_id %q, want the default's bare ID %q", got, owned)
		}
	}
	if tc.Advertised("kill_sandbox") != nil {
		r := leakCall(ctx, tc, c, s, "kill_sandbox", "kill_sandbox", map[string]any{})
		if got := r.String("sandbox_id"); got != owned {
			c.addf("kill_sandbox: sandbox_id %q, want %q", got, owned)
		}
	}
	c.done()
}

func specMetadataUnreported(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	bare := tc.Seed(fakeprovider.SandboxSeed{Omit: []string{"cpuCount", "memoryMB", "diskSizeMB"}})
	timeless := tc.Seed(fakeprovider.SandboxSeed{Omit: []string{"startedAt", "endAt"}})
	wantNull := map[string][]string{
		bare:     {"cpu_count", "memory_mb", "disk_size_mb"},
		timeless: {"started_at", "end_at"},
	}
	list := leakCall(ctx, tc, c, s, "list_sandboxes", "list_sandboxes", map[string]any{})
	for _, id := range []string{bare, timeless} {
		got := map[string]map[string]any{
			"get_sandbox":    leakCall(ctx, tc, c, s, "get_sandbox", "get_sandbox", map[string]any{"sandbox_id": id}).Structured,
			"list_sandboxes": leakListed(list, id),
		}
		for label, m := range got {
			if m == nil {
				c.addf("%s: no metadata for %s", label, id)
				continue
			}
			c.metadata(label, m, id)
			for _, k := range wantNull[id] {
				if v, ok := m[k]; !ok || v != nil {
					c.addf("%s: %s is %v (present %v), want null: the platform did not report it", label, k, v, ok)
				}
			}
		}
	}
	c.done()
}

// leakSeed plants an external sandbox carrying user metadata, environment
// variables and an envd access token.
func leakSeed(tc *TestContext) string {
	return tc.Seed(fakeprovider.SandboxSeed{
		Metadata: map[string]string{leakMetaKey: leakMetaValue},
		EnvVars:  map[string]string{leakEnvName: leakEnvValue},
		Secure:   true,
	})
}

// leakLogScan checks the server's log lines written since mark.
func leakLogScan(tc *TestContext, c *errsChecker, mark int, extra ...string) {
	logs := tc.Logs()
	if mark <= len(logs) {
		logs = logs[mark:]
	}
	c.noLeak("the server's log", logs, extra...)
}

// leakCall makes a call that must succeed and scans its result.
func leakCall(ctx context.Context, tc *TestContext, c *errsChecker, s *Session, label, tool string, args map[string]any) *Result {
	r := s.Call(ctx, tool, args)
	c.success(label, r)
	c.noLeak(label, r.JSON, leakPlanted...)
	return r
}

// leakDefined drops from a harmless call's arguments those the tool does
// not define (run_code's language, a one-shot run_code's sandbox_id):
// whether it has them is EXEC-2's question, not this family's.
func leakDefined(tc *TestContext, tool string, args map[string]any) map[string]any {
	props, ok := advertisedProps(tc, tool)
	if !ok {
		return args
	}
	out := map[string]any{}
	for k, v := range args {
		if _, has := props[k]; has {
			out[k] = v
		}
	}
	return out
}

// leakMetadataKeys are the nine keys of sandbox metadata (META-1).
var leakMetadataKeys = []string{"cpu_count", "disk_size_mb", "end_at", "memory_mb", "region", "sandbox_id", "started_at", "status", "template"}

// metadata checks one metadata object: exactly the nine keys (META-1),
// times in RFC 3339 UTC or null (META-2), resources numbers or null
// (META-3), and, when wantID is set, the bare ID (META-5).
func (c *errsChecker) metadata(label string, m map[string]any, wantID string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != strings.Join(leakMetadataKeys, ",") {
		c.addf("%s: metadata keys %s, want exactly %s", label, strings.Join(keys, ", "), strings.Join(leakMetadataKeys, ", "))
	}
	for _, k := range []string{"started_at", "end_at"} {
		switch v := m[k].(type) {
		case nil:
		case string:
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				c.addf("%s: %s %q is not RFC 3339", label, k, v)
			} else if _, off := t.Zone(); off != 0 || !(strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "+00:00")) {
				c.addf("%s: %s %q is not in UTC", label, k, v)
			}
		default:
			c.addf("%s: %s is %T, want an RFC 3339 string or null", label, k, v)
		}
	}
	for _, k := range []string{"cpu_count", "memory_mb", "disk_size_mb"} {
		if v, ok := m[k]; ok && v != nil {
			if _, num := v.(float64); !num {
				c.addf("%s: %s is %T, want a number or null", label, k, v)
			}
		}
	}
	if wantID != "" && m["sandbox_id"] != wantID {
		c.addf("%s: sandbox_id %v, want the bare ID %q (META-5)", label, m["sandbox_id"], wantID)
	}
}

// leakListed returns the list_sandboxes item of id, or nil.
func leakListed(r *Result, id string) map[string]any {
	items, _ := r.Structured["sandboxes"].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["sandbox_id"] == id {
			return m
		}
	}
	return nil
}

// leakBaitBodies are error bodies carrying a raw message, an internal URL
// and a stack trace, in E2B's shape and in the daemon's RPC shape.
func leakBaitBodies(status int) []string {
	trace := "goroutine 7 [running]: api/handlers.go:42"
	return []string{
		fmt.Sprintf(`{"code":%d,"message":"%s from https://%s/v2/sandboxes (%s)"}`, status, leakRawMsg, leakRawHost, trace),
		fmt.Sprintf(`{"code":"internal","message":"%s from http://%s/process (%s)"}`, leakRawMsg, leakRawHost, trace),
	}
}

// leakKV flattens a map into key, value pairs for withArgs.
func leakKV(m map[string]any) []any {
	var kv []any
	for k, v := range m {
		kv = append(kv, k, v)
	}
	return kv
}

// metadataZones are the offsets a platform might answer in: a half-hour
// zone east of UTC and one west of it.
var metadataZones = []*time.Location{
	time.FixedZone("UTC+05:30", 5*3600+1800),
	time.FixedZone("UTC-08:00", -8*3600),
}

func specMetadataTimesInUTC(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	c := newErrsChecker(tc)
	var ids []string
	for _, zone := range metadataZones {
		ids = append(ids, tc.Seed(fakeprovider.SandboxSeed{Zone: zone, EndAt: tc.Clock.Now().Add(time.Hour)}))
	}
	list := leakCall(ctx, tc, c, s, "list_sandboxes", "list_sandboxes", map[string]any{})
	for _, id := range ids {
		rec, _ := tc.Fake.Sandbox(id)
		for label, m := range map[string]map[string]any{
			"get_sandbox":    leakCall(ctx, tc, c, s, "get_sandbox", "get_sandbox", map[string]any{"sandbox_id": id}).Structured,
			"list_sandboxes": leakListed(list, id),
		} {
			if m == nil {
				c.addf("%s: no metadata for %s", label, id)
				continue
			}
			c.metadata(label, m, id)
			for key, want := range map[string]time.Time{"started_at": rec.StartedAt, "end_at": rec.EndAt} {
				v, _ := m[key].(string)
				got, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					continue // c.metadata reported it
				}
				if d := got.Sub(want); d > time.Second || d < -time.Second {
					c.addf("%s: %s of %s is %s, but the platform said %s: not the same instant", label, key, id, v, want.UTC().Format(time.RFC3339))
				}
			}
		}
	}
	c.done()
}
