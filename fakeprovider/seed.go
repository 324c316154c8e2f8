package fakeprovider

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// omittableFields are the JSON fields a seed may leave out of get and list
// answers, to imitate a platform that does not report them.
func omittableFields() []string {
	return []string{
		"alias", "clientID", "cpuCount", "diskSizeMB", "domain", "endAt", "envdAccessToken",
		"envdVersion", "memoryMB", "metadata", "startedAt", "state", "templateID",
	}
}

// A SandboxSeed describes a sandbox to plant with [Provider.AddSandbox].
// Zero fields take the documented defaults.
type SandboxSeed struct {
	// ID is the sandbox ID; if empty, one is generated. It must match
	// ^[a-z0-9]+$ and not be in use.
	ID string
	// Template is a template alias or ID known to the Provider; if empty, "base".
	Template string
	// Metadata is the user metadata; with [Options.Canaries] the canary
	// entry is added to it.
	Metadata map[string]string
	// EnvVars are the environment variables; with [Options.Canaries] the
	// canary entry is added.
	EnvVars map[string]string
	// Secure gives the sandbox an envdAccessToken its daemon requires.
	Secure bool
	// State is the initial state; if empty, StateRunning.
	State State
	// StartedAt is the start time; if zero, the clock's now.
	StartedAt time.Time
	// EndAt is when the sandbox expires (for a paused one: when it was
	// paused). If zero: now + 300 s, or now when paused.
	EndAt time.Time
	// CPUCount, MemoryMB and DiskSizeMB override the template's resources
	// when non-zero.
	CPUCount, MemoryMB, DiskSizeMB int
	// AutoPause makes the sandbox pause rather than die at its EndAt, and
	// AutoResume is reported in its lifecycle, as for a create with
	// "autoPause" and "autoResume": {"enabled": true}.
	AutoPause, AutoResume bool
	// Omit lists JSON fields to leave out of get and list answers, for
	// example "cpuCount", "memoryMB", "diskSizeMB" (a platform that does not
	// report resources). Allowed: alias, clientID, cpuCount, diskSizeMB,
	// domain, endAt, envdAccessToken, envdVersion, memoryMB, metadata,
	// startedAt, state, templateID.
	Omit []string
	// Zone, when set, writes the sandbox's startedAt and endAt in get and
	// list answers with that zone's offset ("2026-01-01T17:30:00+05:30")
	// instead of UTC: the same instants, in a form a server must convert
	// (META-2). The platform answers in UTC; this imitates one that does not.
	Zone *time.Location
}

// AddSandbox plants a sandbox described by seed and returns its ID. Its
// daemon, if [Options.NewDaemon] is set, is created at once. AddSandbox
// panics on misuse (unknown template, state or omitted field, malformed or
// duplicate ID, EndAt before StartedAt), which is appropriate for test setup.
// Seeding ignores the sandbox limit.
func (p *Provider) AddSandbox(seed SandboxSeed) string {
	tmplName := seed.Template
	if tmplName == "" {
		tmplName = "base"
	}
	alias, tmpl, ok := p.lookupTemplate(tmplName)
	if !ok {
		panic(fmt.Sprintf("fakeprovider: AddSandbox: unknown template %q", tmplName))
	}
	state := seed.State
	if state == "" {
		state = StateRunning
	}
	if !state.valid() {
		panic(fmt.Sprintf("fakeprovider: AddSandbox: unknown state %q", state))
	}
	for _, f := range seed.Omit {
		if !slices.Contains(omittableFields(), f) {
			panic(fmt.Sprintf("fakeprovider: AddSandbox: field %q cannot be omitted (allowed: %v)", f, omittableFields()))
		}
	}
	id := seed.ID
	if id == "" {
		id = newSandboxID()
	} else if !sandboxIDPattern.MatchString(id) {
		panic(fmt.Sprintf("fakeprovider: AddSandbox: sandbox ID %q does not match ^[a-z0-9]+$", id))
	}
	now := p.clock.Now()
	startedAt := seed.StartedAt
	if startedAt.IsZero() {
		startedAt = now
	}
	endAt := seed.EndAt
	if endAt.IsZero() {
		endAt = now.Add(300 * time.Second)
		if state == StatePaused {
			endAt = now
		}
	}
	if endAt.Before(startedAt) {
		panic(fmt.Sprintf("fakeprovider: AddSandbox: EndAt %v is before StartedAt %v", endAt, startedAt))
	}
	s := p.newRecord(id, alias, tmpl, seed.Secure, seed.Metadata, seed.EnvVars)
	s.state, s.startedAt, s.endAt = state, startedAt, endAt
	s.omit = slices.Clone(seed.Omit)
	s.zone = seed.Zone
	s.autoPause, s.autoResume = seed.AutoPause, seed.AutoResume
	if seed.CPUCount != 0 {
		s.cpuCount = seed.CPUCount
	}
	if seed.MemoryMB != 0 {
		s.memoryMB = seed.MemoryMB
	}
	if seed.DiskSizeMB != 0 {
		s.diskSizeMB = seed.DiskSizeMB
	}
	s.daemon = p.startDaemon(s)
	var dup bool
	p.update(func(time.Time) []Daemon {
		if _, dup = p.sandboxes[id]; dup {
			return nil
		}
		p.sandboxes[id] = s
		return nil
	})
	if dup {
		if s.daemon != nil {
			s.daemon.Close()
		}
		panic(fmt.Sprintf("fakeprovider: AddSandbox: sandbox ID %q is already in use", id))
	}
	return id
}

// SetState moves sandbox id to state, as the platform would while pausing,
// killing or snapshotting it. Moving to StatePaused sets endAt to now (E2B
// reports the pause time as a paused sandbox's endAt); moving out of it
// keeps endAt, so use [Provider.SetEndAt] to give the sandbox a future.
// SetState panics when the sandbox does not exist or the state is unknown.
func (p *Provider) SetState(id string, state State) {
	if !state.valid() {
		panic(fmt.Sprintf("fakeprovider: SetState: unknown state %q", state))
	}
	var found bool
	p.update(func(now time.Time) []Daemon {
		s := p.sandboxes[CanonicalSandboxID(id)] // a legacy <id>-<clientID> too
		if s == nil {
			return nil
		}
		found = true
		if state == StatePaused && s.state != StatePaused {
			s.endAt = now
		}
		s.state = state
		return nil
	})
	if !found {
		panic(fmt.Sprintf("fakeprovider: SetState: no live sandbox %q", id))
	}
}

// SetEndAt moves live sandbox id's endAt (for a paused one: its pause time),
// bypassing the platform's clamping. It panics when the sandbox does not exist.
func (p *Provider) SetEndAt(id string, endAt time.Time) {
	var found bool
	p.update(func(time.Time) []Daemon {
		if s := p.sandboxes[CanonicalSandboxID(id)]; s != nil { // a legacy <id>-<clientID> too
			found = true
			s.endAt = endAt
		}
		return nil
	})
	if !found {
		panic(fmt.Sprintf("fakeprovider: SetEndAt: no live sandbox %q", id))
	}
}

// lookupTemplate finds a template by alias or ID and returns its alias.
func (p *Provider) lookupTemplate(name string) (string, Template, bool) {
	if t, ok := p.templates[name]; ok {
		return name, t, true
	}
	for _, alias := range slices.Sorted(maps.Keys(p.templates)) {
		if t := p.templates[alias]; t.ID == name {
			return alias, t, true
		}
	}
	return "", Template{}, false
}

// newRecord builds a sandbox from a template with fresh canaries in its
// access tokens and, when canaries are on, in its clientID, domain, metadata
// and environment. The caller sets state and times.
func (p *Provider) newRecord(id, alias string, tmpl Template, secure bool, metadata, envVars map[string]string) *sandboxRecord {
	templateID := tmpl.ID
	if templateID == "" {
		templateID = alias
	}
	envdVersion := tmpl.EnvdVersion
	if envdVersion == "" {
		envdVersion = DefaultEnvdVersion
	}
	s := &sandboxRecord{
		id:                 id,
		templateID:         templateID,
		envdVersion:        envdVersion,
		clientID:           ClientID,
		trafficAccessToken: p.canaries.issue(canaryTrafficToken),
		metadata:           maps.Clone(metadata),
		envVars:            maps.Clone(envVars),
		cpuCount:           tmpl.CPUCount,
		memoryMB:           tmpl.MemoryMB,
		diskSizeMB:         tmpl.DiskSizeMB,
	}
	if alias != templateID {
		s.alias = alias
	}
	if secure {
		s.envdAccessToken = p.canaries.issue(canaryEnvdToken)
	}
	if p.canaryMode {
		// Dash-free, like the platform's own clientIDs (SDK 1.x joins
		// "<sandboxID>-<clientID>" and splits it again).
		s.clientID = p.canaries.issueCompact(canaryClientID)
		s.domain = p.canaries.issue(canaryDomain) + "." + DomainSuffix
		if s.metadata == nil {
			s.metadata = make(map[string]string)
		}
		s.metadata[CanaryMetadataKey] = p.canaries.issue(canaryMetadata)
		if s.envVars == nil {
			s.envVars = make(map[string]string)
		}
		s.envVars[CanaryEnvVar] = p.canaries.issue(canaryEnvVar)
	}
	return s
}

// startDaemon builds s's daemon, or returns nil when the Provider has none.
func (p *Provider) startDaemon(s *sandboxRecord) Daemon {
	if p.newDaemon == nil {
		return nil
	}
	return p.newDaemon(DaemonConfig{
		SandboxID:   s.id,
		TemplateID:  s.templateID,
		AccessToken: s.envdAccessToken,
		EnvVars:     maps.Clone(s.envVars),
	})
}
