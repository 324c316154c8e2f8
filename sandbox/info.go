package sandbox

import "time"

// State is a sandbox's platform state.
type State string

// The states the platform reports.
const (
	StateRunning State = "running"
	StatePaused  State = "paused"
)

// Info is the metadata of a sandbox: the nine fields a caller may see. Times
// and resources the platform did not report are nil. Access tokens, the
// sandbox domain, environment variables and user metadata are deliberately
// absent.
type Info struct {
	// SandboxID is the ID as a caller must pass it back: bare for the default
	// provider, "provider:id" for any other.
	SandboxID  string     `json:"sandbox_id"`
	Template   string     `json:"template"`
	Status     State      `json:"status"`
	Region     *string    `json:"region"`
	StartedAt  *time.Time `json:"started_at"`
	EndAt      *time.Time `json:"end_at"`
	CPUCount   *int       `json:"cpu_count"`
	MemoryMB   *int       `json:"memory_mb"`
	DiskSizeMB *int       `json:"disk_size_mb"`
}

// wireSandbox is the union of the platform's Sandbox, SandboxDetail and
// ListedSandbox schemas.
type wireSandbox struct {
	TemplateID         string            `json:"templateID"`
	Alias              *string           `json:"alias"`
	SandboxID          string            `json:"sandboxID"`
	ClientID           string            `json:"clientID"`
	StartedAt          *time.Time        `json:"startedAt"`
	EndAt              *time.Time        `json:"endAt"`
	CPUCount           *int              `json:"cpuCount"`
	MemoryMB           *int              `json:"memoryMB"`
	DiskSizeMB         *int              `json:"diskSizeMB"`
	State              State             `json:"state"`
	EnvdVersion        string            `json:"envdVersion"`
	EnvdAccessToken    *string           `json:"envdAccessToken"`
	TrafficAccessToken *string           `json:"trafficAccessToken"`
	Domain             *string           `json:"domain"`
	Metadata           map[string]string `json:"metadata"`
}

// info converts a wire record into the caller-visible metadata.
func (w *wireSandbox) info(qualifiedID string, region string) Info {
	in := Info{
		SandboxID:  qualifiedID,
		Template:   w.TemplateID,
		Status:     w.State,
		StartedAt:  utc(w.StartedAt),
		EndAt:      utc(w.EndAt),
		CPUCount:   reported(w.CPUCount),
		MemoryMB:   reported(w.MemoryMB),
		DiskSizeMB: reported(w.DiskSizeMB),
	}
	if w.Alias != nil && *w.Alias != "" {
		in.Template = *w.Alias
	}
	if region != "" {
		r := region
		in.Region = &r
	}
	return in
}

func utc(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// reported keeps a resource figure the platform actually reported; older
// platform versions send -1 for "unknown", which is not a figure.
func reported(n *int) *int {
	if n == nil || *n < 0 {
		return nil
	}
	return n
}
