package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/conformance/cloudstate"
	"github.com/sandboxkit/sandboxkit/evidence"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// recorder collects what an evidence bundle needs while the run goes: the
// run's identity, each spec's transcript, the secrets to redact, and the
// cleanup outcome.
type recorder struct {
	cfg      *Config
	runID    string
	started  time.Time
	redactor *evidence.Redactor

	mu            sync.Mutex
	run           *runState
	transcripts   map[string][]Exchange
	failedCleanup []string
	selection     map[string]any
	evidenceErr   error
}

func newRecorder(cfg *Config) *recorder {
	id := cfg.RunID
	if id == "" {
		id = cloudstate.NewRunID()
	}
	return &recorder{cfg: cfg, runID: id, started: time.Now().UTC(), redactor: evidence.NewRedactor(),
		transcripts: map[string][]Exchange{}}
}

// attach ties the recorder to the started run.
func (rec *recorder) attach(r *runState) {
	rec.mu.Lock()
	rec.run = r
	rec.mu.Unlock()
	if r.hub != nil {
		rec.redactor.Add(r.hub.apiKey)
	}
	for _, v := range rec.cfg.Headers {
		rec.redactor.Add(v, headerSecret(v))
	}
	for _, kv := range rec.cfg.ServerEnv {
		if k, v, ok := strings.Cut(kv, "="); ok && secretName(k) {
			rec.redactor.Add(v)
		}
	}
}

func (rec *recorder) runState() *runState {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.run
}

// specDone keeps a finished spec's transcript (a retried spec keeps its
// last attempt) and, against the fake, the canaries it handed out.
func (rec *recorder) specDone(tc *TestContext) {
	tr := tc.Transcript()
	rec.mu.Lock()
	rec.transcripts[tc.specID] = tr
	rec.mu.Unlock()
	if tc.Fake != nil {
		for _, c := range tc.Fake.Canaries() {
			// A malformed body the fake served for a file download is the
			// file's content as far as the server can tell: passing it on
			// (even base64-encoded) is no leak.
			if !strings.HasPrefix(c, "canary-body-") {
				rec.redactor.Add(c)
			}
		}
	}
}

// allTranscripts returns every finished spec's transcript by spec ID.
func (rec *recorder) allTranscripts() map[string][]Exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make(map[string][]Exchange, len(rec.transcripts))
	for k, v := range rec.transcripts {
		out[k] = v
	}
	return out
}

func (rec *recorder) cleanupFailed(ids []string) {
	rec.mu.Lock()
	rec.failedCleanup = append(rec.failedCleanup, ids...)
	rec.mu.Unlock()
}

// currentRedactor is the redactor with every secret the run has seen.
func (rec *recorder) currentRedactor() *evidence.Redactor {
	if r := rec.runState(); r != nil && r.cloud != nil {
		rec.redactor.Add(r.cloud.secrets.all()...)
	}
	return rec.redactor
}

// redact removes every secret the run has seen from s.
func (rec *recorder) redact(s string) string { return rec.currentRedactor().RedactString(s) }

// writeCloudSummary tells, after the summary of a cloud run, what became
// of the sandboxes it created.
func (rec *recorder) writeCloudSummary(w io.Writer) {
	r := rec.runState()
	if r == nil || r.cloud == nil {
		return
	}
	rr := r.cloud.tracker.Record()
	cl := cleanupStats(rr, nil)
	fmt.Fprintf(w, "cloud run %s at %s: %d sandbox(es) created and tracked; %d already gone when checked, %d destroyed by the kit\n",
		rec.runID, rr.APIHost, cl.Tracked, cl.Gone, cl.DestroyedByKit)
	if len(cl.NotCreated) > 0 {
		fmt.Fprintf(w, "NOT DESTROYED, not created by the run: the server reported %s as created, but the platform says it started before the run\n",
			strings.Join(cl.NotCreated, ", "))
	}
	if err := r.cloud.tracker.WriteErr(); err != nil {
		fmt.Fprintf(w, "STATE FILE NOT UPDATED: %v: it may not list every sandbox the run created\n", err)
	}
	rec.mu.Lock()
	failed := append([]string(nil), rec.failedCleanup...)
	rec.mu.Unlock()
	if len(failed) > 0 {
		fmt.Fprintf(w, "CLEANUP FAILED: %d sandbox(es) could not be destroyed: %s\n  run: sandboxkit sweep --run %s --state-dir %s\n",
			len(failed), strings.Join(failed, ", "), rec.runID, rec.cfg.stateDir())
	}
}

func cleanupStats(rr cloudstate.RunRecord, failed []string) *evidence.Cleanup {
	c := &evidence.Cleanup{Tracked: len(rr.Sandboxes), Failed: failed}
	for _, s := range rr.Sandboxes {
		switch s.State {
		case cloudstate.SandboxGone:
			c.Gone++
		case cloudstate.SandboxDestroyed:
			c.DestroyedByKit++
		case cloudstate.SandboxNotCreated:
			c.NotCreated = append(c.NotCreated, s.ID)
		}
	}
	return c
}

// writeEvidence writes the run's evidence bundle to dir and returns its
// mode.
func (rec *recorder) writeEvidence(dir string, report ginkgo.Report) (evidence.Mode, error) {
	b := rec.bundle(report)
	return b.Manifest.Mode, evidence.Write(dir, b, rec.currentRedactor())
}

// evidenceMaxString bounds each string of a transcript in a bundle: longer
// ones (base64 payloads, big outputs) keep their head and tail.
const evidenceMaxString = 4096

// bundle builds the evidence of the run from Ginkgo's report.
func (rec *recorder) bundle(report ginkgo.Report) *evidence.Bundle {
	cfg := rec.cfg
	m := evidence.Manifest{
		Mode:        cfg.Mode(),
		RunID:       rec.runID,
		KitVersion:  Version,
		KitRevision: kitRevision(),
		GoVersion:   runtime.Version(),
		Transport:   string(cfg.Kind()),
		StartedAt:   rec.started,
		EndedAt:     time.Now().UTC(),
		Config:      cfg.redacted(),
		// A finding fails no spec: the bundle carries it, and its status
		// says the run did not pass.
		Findings: runFindings(report),
	}
	if cfg.Kind() == TargetHTTP && len(cfg.ServerCommand) == 0 {
		m.Config["server_log"] = "not captured: the server was already running (the kit did not start it)"
	}
	rec.mu.Lock()
	for k, v := range rec.selection {
		m.Config[k] = v
	}
	failed := append([]string(nil), rec.failedCleanup...)
	rec.mu.Unlock()
	r := rec.runState()
	var serverLog string
	if r != nil {
		if r.server != nil {
			m.Server = evidence.Server{Name: r.server.Name, Version: r.server.Version}
		}
		if r.target != nil {
			serverLog = r.target.logs()
		}
		m.Config["settle_timeout"] = r.settleTime.String()
	}
	switch {
	case r != nil && r.cloud != nil:
		m.ProviderID = sandbox.DefaultProviderID
		m.APIHost = r.cloud.apiHost
		m.Region = r.cloud.observedRegion()
		m.Cleanup = cleanupStats(r.cloud.tracker.Record(), failed)
		if evidence.IsLoopbackHost(m.APIHost) {
			// The fake (or another stand-in) posing as a real provider:
			// evidence about a loopback host, selected as a cloud run.
			m.Mode, m.KitMode = evidence.ModeLoopback, evidence.ModeCloud
		}
	case cfg.Cloud:
		m.ProviderID = sandbox.DefaultProviderID
	default:
		m.ProviderID = "sandboxkit-fake"
		m.APIHost = "in-process"
		if r != nil && r.hub != nil && r.hub.srv != nil {
			if u, err := url.Parse(r.hub.srv.URL()); err == nil {
				m.APIHost = u.Host
			}
		}
	}

	order := map[string]int{}
	for i, s := range Specs() {
		order[s.ID] = i
	}
	var results []evidence.SpecResult
	selected := rec.labelFilter()
	for _, sr := range report.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		fam, id, rules := classify(sr.Labels())
		if id == "" {
			continue
		}
		msg := strings.TrimSpace(sr.Failure.Message)
		if sr.State.Is(types.SpecStateSkipped) && msg == "" {
			msg = notRunReason(cfg, report, selected, sr.Labels())
		}
		results = append(results, evidence.SpecResult{
			ID: id, Title: strings.TrimPrefix(sr.LeafNodeText, "["+id+"] "), Family: string(fam), Rules: rules,
			State: sr.State.String(), DurationMS: sr.RunTime.Milliseconds(), Message: msg,
		})
	}
	sort.SliceStable(results, func(i, j int) bool { return order[results[i].ID] < order[results[j].ID] })

	red := rec.currentRedactor()
	transcripts := rec.allTranscripts()
	var tr []evidence.Exchange
	for _, res := range results {
		for i, ex := range transcripts[res.ID] {
			tr = append(tr, evidence.Exchange{
				Spec: res.ID, Seq: i + 1, Session: ex.Session, Tool: ex.Tool, Probe: ex.Probe,
				Arguments: elideJSON(ex.Arguments, red), Result: elideJSON([]byte(ex.Result), red),
			})
		}
	}
	return &evidence.Bundle{Manifest: m, Results: results, Transcript: tr, ServerLog: serverLog}
}

// labelFilter returns the run's label filter as a predicate over a spec's
// labels; a filter that does not parse selects everything.
func (rec *recorder) labelFilter() types.LabelFilter {
	rec.mu.Lock()
	query, _ := rec.selection["label_filter"].(string)
	rec.mu.Unlock()
	f, err := types.ParseLabelFilter(query)
	if err != nil {
		return func([]string) bool { return true }
	}
	return f
}

// notRunReason says why a spec that Ginkgo skipped without a message did
// not run: the fake it needs is absent in cloud mode, the run stopped
// before it (an interrupt, the suite timeout, fail-fast), or the selection
// left it out.
func notRunReason(cfg *Config, report ginkgo.Report, selected types.LabelFilter, labels []string) string {
	switch {
	case cfg.Cloud && slices.Contains(labels, LabelNeedsFake):
		return "not run in cloud mode: needs the fake provider (fault injection, journal or seeding)"
	case selected(labels) && len(report.SpecialSuiteFailureReasons) > 0:
		return "not run: the run stopped before it (" + strings.Join(report.SpecialSuiteFailureReasons, "; ") + ")"
	case selected(labels) && report.SuiteConfig.FailFast && !report.SuiteSucceeded:
		return "not run: the run stopped at the first failure (fail-fast)"
	}
	return "not selected"
}

// elideJSON redacts and shortens every long string of a JSON value; text
// that is not JSON becomes one (shortened) JSON string.
func elideJSON(raw []byte, red *evidence.Redactor) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		data, _ := json.Marshal(elideString(string(raw), red))
		return data
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return elideString(x, red)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	v = walk(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		data, _ := json.Marshal(elideString(string(raw), red))
		return data
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func elideString(s string, red *evidence.Redactor) string {
	if len(s) <= evidenceMaxString {
		return s
	}
	s = red.RedactString(s) // before cutting, so no secret is cut in half
	if len(s) <= evidenceMaxString {
		return s
	}
	head, tail := cutUTF8(s, 1024), s[len(s)-256:]
	for len(tail) > 0 && !isRuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s...[%d bytes elided from the evidence]...%s", head, len(s)-len(head)-len(tail), tail)
}

func cutUTF8(s string, n int) string {
	for n > 0 && n < len(s) && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// kitRevision is the VCS revision the kit was built from, the module
// version, or "unknown".
func kitRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if dirty {
			rev += "+dirty"
		}
		return rev
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return "module " + v
	}
	return "unknown"
}

// evidenceDirAbs is the absolute form of an evidence directory, for
// messages.
func evidenceDirAbs(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
