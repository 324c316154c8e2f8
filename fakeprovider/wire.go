package fakeprovider

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// wireSandbox is E2B's Sandbox schema: the answer of create and connect.
type wireSandbox struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	Alias              string  `json:"alias,omitempty"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// wireListed is E2B's ListedSandbox schema: one item of the list answer.
type wireListed struct {
	TemplateID   string            `json:"templateID"`
	Alias        string            `json:"alias,omitempty"`
	SandboxID    string            `json:"sandboxID"`
	ClientID     string            `json:"clientID"`
	StartedAt    time.Time         `json:"startedAt"`
	EndAt        time.Time         `json:"endAt"`
	CPUCount     int               `json:"cpuCount"`
	MemoryMB     int               `json:"memoryMB"`
	DiskSizeMB   int               `json:"diskSizeMB"`
	State        string            `json:"state"`
	EnvdVersion  string            `json:"envdVersion"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	VolumeMounts []wireVolumeMount `json:"volumeMounts,omitempty"`
}

// wireDetail is E2B's SandboxDetail schema: the answer of get.
type wireDetail struct {
	wireListed
	EnvdAccessToken     string          `json:"envdAccessToken,omitempty"`
	Domain              *string         `json:"domain"`
	AllowInternetAccess *bool           `json:"allowInternetAccess"`
	Lifecycle           wireLifecycle   `json:"lifecycle"`
	Network             json.RawMessage `json:"network,omitempty"`
}

// wireLifecycle is E2B's SandboxLifecycle schema (e2b@2.51.0 index.d.ts:2565).
type wireLifecycle struct {
	AutoResume bool   `json:"autoResume"`
	OnTimeout  string `json:"onTimeout"` // "kill" or "pause"
}

// wireVolumeMount is E2B's SandboxVolumeMount schema.
type wireVolumeMount struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// wireAutoResume is E2B's SandboxAutoResumeConfig schema.
type wireAutoResume struct {
	Enabled *bool `json:"enabled"`
}

// newSandboxBody is E2B's NewSandbox and NewSandboxV2 schemas (the create
// bodies; "secure" is v1's only), plus the resource fields of
// [Options.AcceptResources].
type newSandboxBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          *wireAutoResume   `json:"autoResume"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	Network             json.RawMessage   `json:"network"`
	VolumeMounts        []wireVolumeMount `json:"volumeMounts"`
	MCP                 json.RawMessage   `json:"mcp"`
	IAM                 json.RawMessage   `json:"iam"`
	CPUCount            *int64            `json:"cpuCount"`
	MemoryMB            *int64            `json:"memoryMB"`
}

// timeoutBody is E2B's SandboxTimeoutRequest and (v1) ConnectSandbox schema.
type timeoutBody struct {
	Timeout *int64 `json:"timeout"`
}

// connectV2Body is E2B's ConnectSandboxV2 schema (e2b@2.51.0 index.d.ts:2219).
type connectV2Body struct {
	Timeout *int64 `json:"timeout"`
	Memory  *bool  `json:"memory"`
}

// pauseBody is E2B's SandboxPauseRequest schema.
type pauseBody struct {
	Memory *bool `json:"memory"`
}

// wireMetric is E2B's SandboxMetric schema (e2b@2.51.0 index.d.ts:2610).
type wireMetric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// domainJSON is s's domain as reported: null when the platform has none
// for it (canaries off), as E2B reports for sandboxes outside a custom cluster.
func (s *sandboxRecord) domainJSON() *string {
	if s.domain == "" {
		return nil
	}
	d := s.domain
	return &d
}

// sandboxJSON returns s as a Sandbox (create/connect answer).
func (s *sandboxRecord) sandboxJSON() wireSandbox {
	t := s.trafficAccessToken
	return wireSandbox{
		TemplateID: s.templateID, SandboxID: s.id, Alias: s.alias, ClientID: s.clientID,
		EnvdVersion: s.envdVersion, EnvdAccessToken: s.envdAccessToken,
		TrafficAccessToken: &t, Domain: s.domainJSON(),
	}
}

// listedJSON returns s as a ListedSandbox.
func (s *sandboxRecord) listedJSON() wireListed {
	return wireListed{
		TemplateID: s.templateID, Alias: s.alias, SandboxID: s.id, ClientID: s.clientID,
		StartedAt: s.inZone(s.startedAt), EndAt: s.inZone(s.endAt),
		CPUCount: s.cpuCount, MemoryMB: s.memoryMB, DiskSizeMB: s.diskSizeMB,
		State: s.state.wire(), EnvdVersion: s.envdVersion, Metadata: maps.Clone(s.metadata),
		VolumeMounts: slices.Clone(s.volumeMounts),
	}
}

// inZone returns t as s's answers write it: in UTC, unless the seed chose
// another zone.
func (s *sandboxRecord) inZone(t time.Time) time.Time {
	if s.zone != nil {
		return t.In(s.zone)
	}
	return t.UTC()
}

// detailJSON returns s as a SandboxDetail.
func (s *sandboxRecord) detailJSON() wireDetail {
	lc := wireLifecycle{AutoResume: s.autoResume, OnTimeout: "kill"}
	if s.autoPause {
		lc.OnTimeout = "pause"
	}
	return wireDetail{
		wireListed: s.listedJSON(), EnvdAccessToken: s.envdAccessToken,
		Domain: s.domainJSON(), AllowInternetAccess: s.allowInternetAccess,
		Lifecycle: lc, Network: slices.Clone(s.network),
	}
}

// withOmissions returns v as JSON without the fields s omits.
func (s *sandboxRecord) withOmissions(v any) any {
	if len(s.omit) == 0 {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Errorf("fakeprovider: marshal sandbox: %w", err))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Errorf("fakeprovider: unmarshal sandbox: %w", err))
	}
	for _, f := range s.omit {
		delete(m, f)
	}
	return m
}
