package fakeprovider

import (
	"encoding/json"
	"fmt"
	"maps"
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
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	SandboxID   string            `json:"sandboxID"`
	ClientID    string            `json:"clientID"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// wireDetail is E2B's SandboxDetail schema: the answer of get.
type wireDetail struct {
	wireListed
	EnvdAccessToken     string  `json:"envdAccessToken,omitempty"`
	Domain              *string `json:"domain"`
	AllowInternetAccess *bool   `json:"allowInternetAccess"`
}

// newSandboxBody is E2B's NewSandbox schema (the create body), plus the
// resource fields of [Options.AcceptResources].
type newSandboxBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	AutoPause           *bool             `json:"autoPause"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	CPUCount            *int64            `json:"cpuCount"`
	MemoryMB            *int64            `json:"memoryMB"`
}

// timeoutBody is E2B's SandboxTimeoutRequest and ConnectSandbox schema.
type timeoutBody struct {
	Timeout *int64 `json:"timeout"`
}

// sandboxJSON returns s as a Sandbox (create/connect answer).
func (s *sandboxRecord) sandboxJSON() wireSandbox {
	return wireSandbox{
		TemplateID: s.templateID, SandboxID: s.id, Alias: s.alias, ClientID: s.clientID,
		EnvdVersion: s.envdVersion, EnvdAccessToken: s.envdAccessToken,
		TrafficAccessToken: &s.trafficAccessToken, Domain: &s.domain,
	}
}

// listedJSON returns s as a ListedSandbox.
func (s *sandboxRecord) listedJSON() wireListed {
	return wireListed{
		TemplateID: s.templateID, Alias: s.alias, SandboxID: s.id, ClientID: s.clientID,
		StartedAt: s.inZone(s.startedAt), EndAt: s.inZone(s.endAt),
		CPUCount: s.cpuCount, MemoryMB: s.memoryMB, DiskSizeMB: s.diskSizeMB,
		State: s.state.wire(), EnvdVersion: s.envdVersion, Metadata: maps.Clone(s.metadata),
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
	return wireDetail{
		wireListed: s.listedJSON(), EnvdAccessToken: s.envdAccessToken,
		Domain: &s.domain, AllowInternetAccess: s.allowInternetAccess,
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
