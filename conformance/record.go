package conformance

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/conformance/internal/record"
	"github.com/sandboxkit/sandboxkit/evidence"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// A run keeps what its evidence needs as it goes: each spec's transcript
// (keep), the secrets it saw (secrets, and the cloud backend's), and the
// sandboxes it could not destroy (noteCleanupFailed). When the run is over,
// evidence says what it was, and package record builds the bundle from
// that, once.

// keep records a finished spec's transcript (a retried spec keeps its last
// attempt) and, against the fake, the canaries it handed out.
func (r *runState) keep(tc *TestContext) {
	tr := tc.Transcript()
	r.mu.Lock()
	r.transcripts[tc.specID] = tr
	r.mu.Unlock()
	if tc.Fake == nil {
		return
	}
	for _, c := range tc.Fake.Canaries() {
		// A malformed body the fake served for a file download is the
		// file's content as far as the server can tell: passing it on
		// (even base64-encoded) is no leak.
		if !strings.HasPrefix(c, "canary-body-") {
			r.secrets.Add(c)
		}
	}
}

// allTranscripts returns every finished spec's transcript by spec ID.
func (r *runState) allTranscripts() map[string][]Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]Exchange, len(r.transcripts))
	for k, v := range r.transcripts {
		out[k] = v
	}
	return out
}

// noteCleanupFailed records sandboxes the run could not destroy.
func (r *runState) noteCleanupFailed(ids []string) {
	r.mu.Lock()
	r.failedCleanup = append(r.failedCleanup, ids...)
	r.mu.Unlock()
}

// cleanupFailures are the sandboxes the run could not destroy.
func (r *runState) cleanupFailures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failedCleanup...)
}

// currentSecrets is the redactor with every secret the run has seen.
func (r *runState) currentSecrets() *evidence.Redactor {
	if r.cloud != nil {
		r.secrets.Add(r.cloud.secrets.all()...)
	}
	return r.secrets
}

// redact removes every secret the run has seen from s.
func (r *runState) redact(s string) string { return r.currentSecrets().RedactString(s) }

// writeCloudSummary tells, after the summary of a cloud run, what became
// of the sandboxes it created.
func (r *runState) writeCloudSummary(w io.Writer) {
	if r.cloud == nil {
		return
	}
	rr := r.cloud.tracker.Record()
	cl := record.Cleanup(rr, nil)
	fmt.Fprintf(w, "cloud run %s at %s: %d sandbox(es) created and tracked; %d already gone when checked, %d destroyed by the kit\n",
		r.id, rr.APIHost, cl.Tracked, cl.Gone, cl.DestroyedByKit)
	if len(cl.NotCreated) > 0 {
		fmt.Fprintf(w, "NOT DESTROYED, not created by the run: the server reported %s as created, but the platform says it started before the run\n",
			strings.Join(cl.NotCreated, ", "))
	}
	if err := r.cloud.tracker.WriteErr(); err != nil {
		fmt.Fprintf(w, "STATE FILE NOT UPDATED: %v: it may not list every sandbox the run created\n", err)
	}
	if failed := r.cleanupFailures(); len(failed) > 0 {
		fmt.Fprintf(w, "CLEANUP FAILED: %d sandbox(es) could not be destroyed: %s\n  run: sandboxkit sweep --run %s --state-dir %s\n",
			len(failed), strings.Join(failed, ", "), r.id, r.cfg.stateDir())
	}
}

// evidence is the finished run as its bundle tells it: report is Ginkgo's
// report of the run, selection the label filter, focus and skip strings it
// ran with.
func (r *runState) evidence(report ginkgo.Report, selection map[string]any) record.Run {
	results := r.results(report, selection)
	transcripts := r.allTranscripts()
	calls := make(map[string][]record.Call, len(transcripts))
	for id, tr := range transcripts {
		for _, ex := range tr {
			calls[id] = append(calls[id], record.Call{Session: ex.Session, Tool: ex.Tool, Probe: ex.Probe, Arguments: ex.Arguments, Result: ex.Result})
		}
	}
	var serverLog string
	if r.target != nil {
		serverLog = r.target.logs()
	}
	return record.Run{Manifest: r.manifest(report, selection), Results: results, Transcripts: calls,
		ServerLog: serverLog, Secrets: r.currentSecrets()}
}

// manifest is the run's identity, configuration, server and provider.
func (r *runState) manifest(report ginkgo.Report, selection map[string]any) evidence.Manifest {
	cfg := r.cfg
	m := evidence.Manifest{
		Mode:        cfg.Mode(),
		RunID:       r.id,
		KitVersion:  Version,
		KitRevision: record.KitRevision(),
		GoVersion:   runtime.Version(),
		Transport:   string(cfg.Kind()),
		StartedAt:   r.started,
		EndedAt:     time.Now().UTC(),
		Config:      cfg.redacted(),
		// A finding fails no spec: the bundle carries it, and its status
		// says the run did not pass.
		Findings: runFindings(report),
	}
	m.Config["settle_timeout"] = r.seams.settle(cfg).String()
	if cfg.Kind() == TargetHTTP && len(cfg.ServerCommand) == 0 {
		m.Config["server_log"] = "not captured: the server was already running (the kit did not start it)"
	}
	for k, v := range selection {
		m.Config[k] = v
	}
	if r.server != nil {
		m.Server = evidence.Server{Name: r.server.Name, Version: r.server.Version}
	}
	switch {
	case r.cloud != nil:
		m.ProviderID = sandbox.DefaultProviderID
		m.APIHost = r.cloud.apiHost
		m.Region = r.cloud.observedRegion()
		m.Cleanup = record.Cleanup(r.cloud.tracker.Record(), r.cleanupFailures())
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
		if r.hub != nil && r.hub.srv != nil {
			if u, err := url.Parse(r.hub.srv.URL()); err == nil {
				m.APIHost = u.Host
			}
		}
	}
	return m
}

// results are the outcomes of the catalog's specs in the report, in
// catalog order; a spec skipped without a message says why it did not run.
func (r *runState) results(report ginkgo.Report, selection map[string]any) []evidence.SpecResult {
	order := map[string]int{}
	for i, s := range Specs() {
		order[s.ID] = i
	}
	var results []evidence.SpecResult
	selected := labelFilterOf(selection)
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
			msg = notRunReason(r.cfg, report, selected, sr.Labels())
		}
		results = append(results, evidence.SpecResult{
			ID: id, Title: strings.TrimPrefix(sr.LeafNodeText, "["+id+"] "), Family: string(fam), Rules: rules,
			State: sr.State.String(), DurationMS: sr.RunTime.Milliseconds(), Message: msg,
		})
	}
	sort.SliceStable(results, func(i, j int) bool { return order[results[i].ID] < order[results[j].ID] })
	return results
}

// labelFilterOf returns a selection's label filter as a predicate over a
// spec's labels; a filter that does not parse selects everything.
func labelFilterOf(selection map[string]any) types.LabelFilter {
	query, _ := selection["label_filter"].(string)
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

// evidenceDirAbs is the absolute form of an evidence directory, for
// messages.
func evidenceDirAbs(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
