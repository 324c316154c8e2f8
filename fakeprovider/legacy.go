package fakeprovider

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Routes the SDKs' sandbox methods do not call, served for clients that do
// (the platform's generated clients, older SDKs). Journalled under these
// strings as their operations.
const (
	RouteResumeSandbox   = "POST /sandboxes/{sandboxID}/resume"
	RouteRefreshSandbox  = "POST /sandboxes/{sandboxID}/refreshes"
	RouteSandboxLogs     = "GET /sandboxes/{sandboxID}/logs"
	RouteSandboxLogsV2   = "GET /v2/sandboxes/{sandboxID}/logs"
	RouteSandboxesMetric = "GET /sandboxes/metrics"
)

// minRefresh is the platform's shortest keep-alive
// (sandbox.SandboxTimeoutDefault in infra's handlers/sandbox_refresh.go).
const minRefresh = 15 * time.Second

// maxMetricsSandboxes is infra's cap on GET /sandboxes/metrics
// (handlers/sandboxes_list_metrics.go).
const maxMetricsSandboxes = 100

// registerLegacyRoutes adds the routes of this file to mux.
func (p *Provider) registerLegacyRoutes(mux *http.ServeMux) {
	for route, h := range map[string]http.HandlerFunc{
		RouteResumeSandbox:   p.handleResume,
		RouteRefreshSandbox:  p.handleRefresh,
		RouteSandboxLogs:     p.handleLogs,
		RouteSandboxLogsV2:   p.handleLogs,
		RouteSandboxesMetric: p.handleSandboxesMetrics,
	} {
		mux.Handle(route, p.controlPlane(route, h))
	}
}

// handleResume serves the deprecated POST /sandboxes/{sandboxID}/resume
// ({timeout, autoPause}; infra handlers/sandbox_resume.go): a paused
// sandbox resumes as connect resumes it (201 Sandbox); a running one is
// 409 "Sandbox <id> is already running".
func (p *Provider) handleResume(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Timeout   *int64 `json:"timeout"`
		AutoPause *bool  `json:"autoPause"`
	}
	id, ok := p.pathIDBody(w, r, &body)
	if !ok {
		return
	}
	timeout := int64(DefaultCreateTimeout / time.Second)
	if body.Timeout != nil {
		timeout = *body.Timeout
	}
	var running bool
	p.update(func(time.Time) []Daemon {
		s := p.sandboxes[id]
		running = s != nil && s.state == StateRunning
		return nil
	})
	if running {
		p.writeError(w, r, http.StatusConflict, fmt.Sprintf("Sandbox %s is already running", id))
		return
	}
	p.handleConnect(w, r, "ResumedSandbox", timeout)
}

// handleRefresh serves POST /sandboxes/{sandboxID}/refreshes ({duration}
// in seconds, at least and by default 15; infra handlers/sandbox_refresh.go):
// the sandbox lives at least that long from now, never shorter. 204.
func (p *Provider) handleRefresh(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Duration *int64 `json:"duration"`
	}
	id, ok := p.pathIDBody(w, r, &body)
	if !ok {
		return
	}
	d := minRefresh
	if body.Duration != nil {
		d = max(time.Duration(*body.Duration)*time.Second, minRefresh)
	}
	p.write(w, r, p.onVisible(id, func(s *sandboxRecord, now time.Time) (reply, []Daemon) {
		if s.state == StatePaused {
			return notFound(id), nil
		}
		if end := p.clampEnd(s, now, d); end.After(s.endAt) {
			s.endAt = end
		}
		return reply{status: http.StatusNoContent}, nil
	}))
}

// handleLogs serves GET /sandboxes/{sandboxID}/logs (SandboxLogs: logs and
// logEntries) and its v2 (SandboxLogsV2Response: logs): the fake's
// sandboxes write no platform logs, so both lists are empty.
func (p *Provider) handleLogs(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	v2 := strings.HasPrefix(r.URL.Path, "/v2/")
	p.write(w, r, p.onVisible(id, func(*sandboxRecord, time.Time) (reply, []Daemon) {
		if v2 {
			return reply{status: http.StatusOK, body: map[string][]any{"logs": {}}}, nil
		}
		return reply{status: http.StatusOK, body: map[string][]any{"logs": {}, "logEntries": {}}}, nil
	}))
}

// handleSandboxesMetrics serves GET /sandboxes/metrics?sandbox_ids=a,b
// (SandboxesWithMetrics; infra handlers/sandboxes_list_metrics.go): the
// latest sample of each named running sandbox; unknown and paused ones are
// left out; more than 100 IDs is 400.
func (p *Provider) handleSandboxesMetrics(w http.ResponseWriter, r *http.Request) {
	var ids []string
	for _, v := range r.URL.Query()["sandbox_ids"] {
		for id := range strings.SplitSeq(v, ",") {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > maxMetricsSandboxes {
		p.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Too many sandboxes requested, maximum is %d", maxMetricsSandboxes))
		return
	}
	out := map[string]wireMetric{}
	p.update(func(now time.Time) []Daemon {
		for _, id := range ids {
			short, err := shortID(id)
			if err != nil {
				continue
			}
			if s := p.sandboxes[short]; s != nil && s.state == StateRunning {
				last := s.startedAt.Add(now.Sub(s.startedAt) / metricsInterval * metricsInterval)
				out[short] = s.metricAt(last)
			}
		}
		return nil
	})
	p.writeJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
}
