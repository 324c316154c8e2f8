package fakeprovider

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// A State is a sandbox's lifecycle state inside the fake. Only running and
// paused ever appear on the wire; the transient states are what a test sets
// with [Provider.SetState] to exercise the platform's 404/409 answers.
type State string

// The states.
const (
	// StateRunning: listed and reported as "running"; every operation works.
	StateRunning State = "running"
	// StatePaused: fully paused (a snapshot). Listed and reported as
	// "paused"; get, list, kill and connect (which resumes it) work;
	// set-timeout gives 404 and envd requests 502. It never expires.
	StatePaused State = "paused"
	// StatePausing: reported as "paused"; set-timeout and connect give 409
	// "is being paused".
	StatePausing State = "pausing"
	// StateKilling: get and kill give 404, the sandbox is not listed, and
	// set-timeout and connect give 409 "is being killed".
	StateKilling State = "killing"
	// StateSnapshotting: reported as "running"; set-timeout and connect give
	// 409 "is being snapshotted".
	StateSnapshotting State = "snapshotting"
)

// valid reports whether s is one of the states above.
func (s State) valid() bool {
	switch s {
	case StateRunning, StatePaused, StatePausing, StateKilling, StateSnapshotting:
		return true
	}
	return false
}

// wire returns the state reported by get and list: "running" or "paused".
func (s State) wire() string {
	switch s {
	case StatePaused, StatePausing:
		return string(StatePaused)
	}
	return string(StateRunning)
}

// visible reports whether get, list and kill can see a sandbox in state s.
func (s State) visible() bool { return s != StateKilling }

// transitionVerb is the word E2B uses in its 409 message for a sandbox
// changing state ("Sandbox %q is being <verb>").
func (s State) transitionVerb() string {
	switch s {
	case StatePausing:
		return "paused"
	case StateKilling:
		return "killed"
	case StateSnapshotting:
		return "snapshotted"
	}
	return ""
}

// sandboxRecord is one live sandbox. Guarded by Provider.mu.
type sandboxRecord struct {
	id                  string
	templateID          string
	alias               string
	clientID            string
	startedForDebug     bool // see SandboxRecord.StartedForDebug
	envdVersion         string
	envdAccessToken     string
	trafficAccessToken  string
	domain              string
	allowInternetAccess *bool
	autoPause           bool // pause rather than kill at endAt
	autoResume          bool
	network             json.RawMessage   // as created; nil when not set
	volumeMounts        []wireVolumeMount // as created
	mcp                 json.RawMessage   // kept, never reported (the platform does not)
	metadata            map[string]string
	envVars             map[string]string
	state               State
	startedAt, endAt    time.Time
	cpuCount            int
	memoryMB            int
	diskSizeMB          int
	omit                []string
	zone                *time.Location // nil: UTC
	daemon              Daemon
	// coldResume is set by a pause with "memory": false: the next resume
	// reboots the daemon.
	coldResume bool
}

// A SandboxRecord is a snapshot of one sandbox's state in the fake, for
// assertions.
type SandboxRecord struct {
	ID                 string
	TemplateID         string
	Alias              string
	ClientID           string
	EnvdVersion        string
	EnvdAccessToken    string // "" for a v1 create without secure: true
	TrafficAccessToken string
	Domain             string
	Metadata           map[string]string // plus the canary entry when canaries are on
	EnvVars            map[string]string // plus the canary entry when canaries are on
	State              State
	StartedAt, EndAt   time.Time
	CPUCount           int
	MemoryMB           int
	DiskSizeMB         int
	// Omit lists the JSON fields left out of get and list answers.
	Omit []string
	// HasDaemon reports whether the sandbox has a daemon.
	HasDaemon bool
	// AutoPause and AutoResume are the lifecycle asked for on create
	// ("autoPause", "autoResume.enabled").
	AutoPause, AutoResume bool
	// StartedForDebug: the fake started it for a request on an e2b 1.x
	// debug port while none ran (see [ListenDebug]); no client created it.
	StartedForDebug bool
}

// record returns a snapshot of s.
func (s *sandboxRecord) record() SandboxRecord {
	return SandboxRecord{
		ID: s.id, TemplateID: s.templateID, Alias: s.alias, ClientID: s.clientID,
		EnvdVersion: s.envdVersion, EnvdAccessToken: s.envdAccessToken,
		TrafficAccessToken: s.trafficAccessToken, Domain: s.domain,
		Metadata: maps.Clone(s.metadata), EnvVars: maps.Clone(s.envVars),
		State: s.state, StartedAt: s.startedAt, EndAt: s.endAt, StartedForDebug: s.startedForDebug,
		CPUCount: s.cpuCount, MemoryMB: s.memoryMB, DiskSizeMB: s.diskSizeMB,
		Omit: slices.Clone(s.omit), HasDaemon: s.daemon != nil,
		AutoPause: s.autoPause, AutoResume: s.autoResume,
	}
}

// expired reports whether s has outlived its endAt at now. Paused sandboxes
// are snapshots and never expire.
func (s *sandboxRecord) expired(now time.Time) bool {
	return s.state != StatePaused && now.After(s.endAt)
}

// update runs fn with the store locked, after removing every sandbox that
// has expired by now; fn returns the daemons it wants closed. Daemons are
// closed after the lock is released, because Close may wait for requests
// that need the lock.
func (p *Provider) update(fn func(now time.Time) []Daemon) {
	p.mu.Lock()
	now := p.clock.Now()
	closers := p.sweepLocked(now)
	if fn != nil {
		closers = append(closers, fn(now)...)
	}
	p.mu.Unlock()
	closeDaemons(closers)
}

// sweepLocked removes expired sandboxes and returns their daemons. A
// running sandbox created with autoPause is paused instead, keeping its
// daemon; its endAt (the pause time) stays the timeout it reached.
func (p *Provider) sweepLocked(now time.Time) []Daemon {
	var closers []Daemon
	for id, s := range p.sandboxes {
		if s.expired(now) {
			if s.autoPause && s.state == StateRunning {
				s.state = StatePaused
				continue
			}
			delete(p.sandboxes, id)
			if s.daemon != nil {
				closers = append(closers, s.daemon)
			}
		}
	}
	return closers
}

// removeLocked deletes sandbox s and returns its daemon, if any.
func (p *Provider) removeLocked(s *sandboxRecord) []Daemon {
	delete(p.sandboxes, s.id)
	if s.daemon == nil {
		return nil
	}
	return []Daemon{s.daemon}
}

// runningCountLocked counts the sandboxes that hold a slot of the
// concurrency limit: every one that is not paused.
func (p *Provider) runningCountLocked() int {
	n := 0
	for _, s := range p.sandboxes {
		if s.state != StatePaused {
			n++
		}
	}
	return n
}

// closeDaemons closes each daemon.
func closeDaemons(ds []Daemon) {
	for _, d := range ds {
		d.Close()
	}
}

// sortRecords orders sandboxes by startedAt, then ID.
func sortRecords(rs []*sandboxRecord) {
	slices.SortFunc(rs, func(a, b *sandboxRecord) int {
		if c := a.startedAt.Compare(b.startedAt); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
}

// Sandbox returns a snapshot of the live sandbox id (any state), and false
// when it does not exist, expired or was killed.
func (p *Provider) Sandbox(id string) (SandboxRecord, bool) {
	var (
		rec SandboxRecord
		ok  bool
	)
	p.update(func(time.Time) []Daemon {
		if s := p.sandboxes[CanonicalSandboxID(id)]; s != nil {
			rec, ok = s.record(), true
		}
		return nil
	})
	return rec, ok
}

// LiveSandboxes returns a snapshot of every live sandbox, in any state,
// ordered by startedAt then ID.
func (p *Provider) LiveSandboxes() []SandboxRecord {
	var out []SandboxRecord
	p.update(func(time.Time) []Daemon {
		rs := slices.Collect(maps.Values(p.sandboxes))
		sortRecords(rs)
		for _, s := range rs {
			out = append(out, s.record())
		}
		return nil
	})
	return out
}

// LiveCount returns the number of live sandboxes, in any state.
func (p *Provider) LiveCount() int {
	n := 0
	p.update(func(time.Time) []Daemon {
		n = len(p.sandboxes)
		return nil
	})
	return n
}

// Close kills every sandbox and closes its daemon. The Provider keeps
// serving afterwards.
func (p *Provider) Close() {
	p.update(func(time.Time) []Daemon {
		var closers []Daemon
		for _, s := range p.sandboxes {
			closers = append(closers, p.removeLocked(s)...)
		}
		return closers
	})
}

// Domain returns the domain of live sandbox id (its envd host is
// "49983-<id>.<domain>"), and false when there is no such sandbox. When the
// sandbox reports no domain (canaries off) it is [DomainSuffix], which the
// fake routes like any other.
func (p *Provider) Domain(id string) (string, bool) {
	rec, ok := p.Sandbox(id)
	if ok && rec.Domain == "" {
		return DomainSuffix, true
	}
	return rec.Domain, ok
}
