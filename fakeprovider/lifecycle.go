package fakeprovider

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// handlePause serves POST /sandboxes/{sandboxID}/pause: a running sandbox
// becomes paused (204) and keeps its daemon; a sandbox that is not running
// gives 409, which e2b@2.51.0 turns into pause() === false (index.mjs
// SandboxApi.pause). The body ({"memory": bool}) is optional; the fake's
// pause always keeps the daemon's state.
func (p *Provider) handlePause(w http.ResponseWriter, r *http.Request) {
	var body pauseBody
	id, ok := p.pathIDBody(w, r, &body)
	if !ok {
		return
	}
	p.write(w, r, p.onVisible(id, func(s *sandboxRecord, now time.Time) (reply, []Daemon) {
		if s.state != StateRunning {
			// e2b-dev/infra packages/api/internal/handlers/sandbox_pause.go.
			return reply{status: http.StatusConflict, msg: fmt.Sprintf("Sandbox '%s' cannot be paused while in '%s' state", id, s.state)}, nil
		}
		s.state = StatePaused
		s.endAt = now // a paused sandbox reports its pause time as endAt
		// SandboxPauseRequest.memory false: a filesystem-only snapshot,
		// so the resume cold-boots (Python SDK sandbox_sync/main.py pause).
		s.coldResume = body.Memory != nil && !*body.Memory
		return reply{status: http.StatusNoContent}, nil
	}))
}

// metricsInterval is how often the fake pretends to sample a sandbox.
const metricsInterval = 5 * time.Second

// handleMetrics serves GET /sandboxes/{sandboxID}/metrics?start&end: a list
// of SandboxMetric samples, one every 5 s from the sandbox's start to now
// (at most the last 100), within [start, end] (Unix seconds) when given.
// The fake's figures are the template's sizes with nothing in use; a paused
// sandbox has no samples since its pause.
func (p *Provider) handleMetrics(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var bounds [2]*time.Time
	for i, name := range []string{"start", "end"} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			p.validationError(w, r, fmt.Sprintf(`parameter %q in query has an error: value %s: an invalid integer: invalid syntax`, name, v))
			return
		}
		t := time.Unix(n, 0)
		bounds[i] = &t
	}
	p.write(w, r, p.onVisible(id, func(s *sandboxRecord, now time.Time) (reply, []Daemon) {
		last := now
		if s.state != StateRunning {
			last = s.endAt
		}
		out := []wireMetric{}
		for t := s.startedAt; !t.After(last); t = t.Add(metricsInterval) {
			if (bounds[0] != nil && t.Before(*bounds[0])) || (bounds[1] != nil && t.After(*bounds[1])) {
				continue
			}
			out = append(out, s.metricAt(t))
		}
		if len(out) > 100 {
			out = slices.Clone(out[len(out)-100:])
		}
		return reply{status: http.StatusOK, body: out}, nil
	}))
}

// metricAt is s's sample at t.
func (s *sandboxRecord) metricAt(t time.Time) wireMetric {
	const mib = 1 << 20
	return wireMetric{
		Timestamp: t.UTC(), TimestampUnix: t.Unix(),
		CPUCount: s.cpuCount, CPUUsedPct: 0,
		MemTotal: int64(s.memoryMB) * mib, DiskTotal: int64(s.diskSizeMB) * mib,
	}
}

// handleListV1 serves the deprecated GET /sandboxes: every running sandbox
// as a ListedSandbox, unpaged, filtered by the "metadata" query as the v2
// list is.
func (p *Provider) handleListV1(w http.ResponseWriter, r *http.Request) {
	var filter map[string]string
	if v := r.URL.Query().Get("metadata"); v != "" {
		m, err := parseMetadataFilter(v)
		if err != nil {
			p.writeError(w, r, http.StatusBadRequest, msgMetadataParse)
			return
		}
		filter = m
	}
	lq := listQuery{running: true, metadata: filter}
	var items []any
	p.update(func(time.Time) []Daemon {
		var rs []*sandboxRecord
		for _, s := range p.sandboxes {
			if lq.matches(s) {
				rs = append(rs, s)
			}
		}
		sortRecords(rs)
		items = make([]any, 0, len(rs))
		for _, s := range rs {
			items = append(items, s.withOmissions(s.listedJSON()))
		}
		return nil
	})
	p.writeJSON(w, http.StatusOK, items)
}
