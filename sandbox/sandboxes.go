package sandbox

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Bounds of list paging.
const (
	// MaxListLimit is the most sandboxes one List call returns, and the most
	// ever asked of the platform in one page.
	MaxListLimit = 100
	// MaxTimeout is the longest lifetime the platform accepts.
	MaxTimeout = 24 * time.Hour
)

// ListOptions selects and pages sandboxes.
type ListOptions struct {
	Provider string
	Region   string
	APIKey   string
	// States filters by state; empty means running and paused.
	States []State
	// Metadata keeps only sandboxes whose metadata has every pair.
	Metadata map[string]string
	// Limit is the page size, 1 to 100; 0 means 100.
	Limit int
	// Offset skips that many sandboxes (>= 0).
	Offset int
}

// List returns one page of the sandboxes the account can see, in the
// platform's order. It walks the platform's X-Next-Token cursor to honour
// Offset, asking for at most 100 sandboxes per request.
//
// Operation: GET /v2/sandboxes
func (p *Platform) List(ctx context.Context, opts *ListOptions) ([]Info, error) {
	const op = OpListSandboxes
	if opts == nil {
		opts = &ListOptions{}
	}
	limit := opts.Limit
	if limit == 0 {
		limit = MaxListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, invalidArgument(op, "limit")
	}
	if opts.Offset < 0 {
		return nil, invalidArgument(op, "offset")
	}
	var state string
	for i, s := range opts.States {
		if s != StateRunning && s != StatePaused {
			return nil, invalidArgument(op, "status")
		}
		if i > 0 {
			state += ","
		}
		state += string(s)
	}
	ep, err := p.resolve(op, opts.Provider, opts.Region, opts.APIKey)
	if err != nil {
		return nil, err
	}

	skip, need := opts.Offset, limit
	out := make([]Info, 0, limit)
	token := ""
	for {
		q := url.Values{}
		if state != "" {
			q.Set("state", state)
		}
		if len(opts.Metadata) > 0 {
			md := url.Values{}
			for k, v := range opts.Metadata {
				md.Set(k, v)
			}
			q.Set("metadata", md.Encode())
		}
		q.Set("limit", strconv.Itoa(min(MaxListLimit, skip+need)))
		if token != "" {
			q.Set("nextToken", token)
		}
		var page []wireSandbox
		hdr, err := p.call(ctx, ep, apiRequest{op: op, path: "/v2/sandboxes", query: q, ok: []int{http.StatusOK}, out: &page})
		if err != nil {
			return nil, err
		}
		for i := range page {
			if skip > 0 {
				skip--
				continue
			}
			if need == 0 {
				break
			}
			out = append(out, page[i].info(p.FormatID(QualifiedID{ep.provider.ID, page[i].SandboxID}), ep.region))
			need--
		}
		token = hdr.Get("X-Next-Token")
		if need == 0 || token == "" || len(page) == 0 {
			return out, nil
		}
	}
}

// CreateOptions describes a new sandbox.
type CreateOptions struct {
	Provider string
	Region   string
	APIKey   string
	// Template defaults to [DefaultTemplate].
	Template string
	// Timeout is the sandbox's lifetime, 1 s to 24 h; 0 means [DefaultSandboxTimeout].
	// It is sent in whole seconds, rounded up.
	Timeout time.Duration
	// EnvVars are set in every process of the sandbox.
	EnvVars map[string]string
	// Metadata is stored with the sandbox and can filter List.
	Metadata map[string]string
	// CPUCount and MemoryMB size the sandbox; 0 keeps the template's value.
	// Only providers with SizedSandboxes accept them.
	CPUCount int
	MemoryMB int
	// Insecure creates a sandbox whose daemon needs no access token. Only
	// the v1 routes can (see [ProviderConfig.Routes]); on v2 every sandbox
	// is secured and Insecure fails with invalid_argument before any call.
	Insecure bool
}

// createBody is the platform's NewSandbox (v1) and NewSandboxV2 schemas;
// Secure is nil on v2, which has no such field.
type createBody struct {
	TemplateID string            `json:"templateID"`
	Timeout    int64             `json:"timeout"`
	EnvVars    map[string]string `json:"envVars,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Secure     *bool             `json:"secure,omitempty"`
	CPUCount   int               `json:"cpuCount,omitempty"`
	MemoryMB   int               `json:"memoryMB,omitempty"`
}

// createPath and connectPath are the concrete paths of create and connect
// in the provider's route family.
func createPath(pc ProviderConfig) string {
	if pc.Routes == RoutesV2 {
		return "/v2/sandboxes"
	}
	return "/sandboxes"
}

func connectPath(pc ProviderConfig, id string) string {
	if pc.Routes == RoutesV2 {
		return "/v2/sandboxes/" + url.PathEscape(id) + "/connect"
	}
	return "/sandboxes/" + url.PathEscape(id) + "/connect"
}

// Create starts a sandbox and returns its managed handle. CPU and memory are
// sent only to providers that accept them; for any other a request for them
// fails with invalid_argument before any call. The timeout is always sent,
// so the two route families' different defaults never apply.
//
// Operation: POST /sandboxes (POST /v2/sandboxes for a v2 provider)
func (p *Platform) Create(ctx context.Context, opts *CreateOptions) (*Sandbox, error) {
	const op = OpCreateSandbox
	if opts == nil {
		opts = &CreateOptions{}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultSandboxTimeout
	}
	secs, err := seconds(op, "timeout", timeout)
	if err != nil {
		return nil, err
	}
	if opts.CPUCount < 0 {
		return nil, invalidArgument(op, "cpu")
	}
	if opts.MemoryMB < 0 {
		return nil, invalidArgument(op, "memory")
	}
	ep, err := p.resolve(op, opts.Provider, opts.Region, opts.APIKey)
	if err != nil {
		return nil, err
	}
	if !ep.provider.SizedSandboxes {
		if opts.CPUCount != 0 {
			return nil, invalidArgument(op, "cpu")
		}
		if opts.MemoryMB != 0 {
			return nil, invalidArgument(op, "memory")
		}
	}
	template := opts.Template
	if template == "" {
		template = DefaultTemplate
	}
	body := createBody{TemplateID: template, Timeout: secs, EnvVars: opts.EnvVars, Metadata: opts.Metadata,
		CPUCount: opts.CPUCount, MemoryMB: opts.MemoryMB}
	if ep.provider.Routes == RoutesV2 {
		if opts.Insecure {
			return nil, invalidArgument(op, "insecure")
		}
	} else {
		secure := !opts.Insecure
		body.Secure = &secure
	}
	var w wireSandbox
	if _, err := p.call(ctx, ep, apiRequest{op: op, path: createPath(ep.provider), body: body, ok: []int{http.StatusCreated, http.StatusOK}, out: &w}); err != nil {
		return nil, err
	}
	if !bareIDPattern.MatchString(w.SandboxID) {
		return nil, &Error{Op: op, Category: ProviderError, HTTPStatus: http.StatusCreated, Code: CodeMalformedResponse}
	}
	if w.State == "" {
		w.State = StateRunning
	}
	return p.newHandle(ep, &w), nil
}

// GetInfoByID reads a sandbox's latest metadata without taking it over: no
// connect call, no in-sandbox client, temporary transport resources.
//
// Operation: GET /sandboxes/{sandboxID}
func (p *Platform) GetInfoByID(ctx context.Context, id string, opts *CallOptions) (*Info, error) {
	const op = OpGetSandbox
	q, ep, err := p.resolveID(op, id, opts)
	if err != nil {
		return nil, err
	}
	var w wireSandbox
	if _, err := p.call(ctx, ep, apiRequest{op: op, path: "/sandboxes/" + url.PathEscape(q.ID), ok: []int{http.StatusOK}, out: &w, oneOff: true}); err != nil {
		return nil, err
	}
	in := w.info(p.FormatID(q), ep.region)
	return &in, nil
}

// GetInfoAndMetadataByID is [Platform.GetInfoByID] that also returns the
// metadata the sandbox was created with ([CreateOptions.Metadata]), for a
// caller that keeps its own records there; like GetInfoByID it keeps no
// connection open. The metadata never belongs in a
// tool result (Info leaves it out on purpose).
//
// Operation: GET /sandboxes/{sandboxID}
func (p *Platform) GetInfoAndMetadataByID(ctx context.Context, id string, opts *CallOptions) (*Info, map[string]string, error) {
	const op = OpGetSandbox
	q, ep, err := p.resolveID(op, id, opts)
	if err != nil {
		return nil, nil, err
	}
	var w wireSandbox
	// A one-off read, as GetInfoByID's: the ID may name a sandbox the
	// caller does not own, and a read by ID keeps no connection (GET-6).
	// A caller that reads its own sandboxes often caches what it read.
	if _, err := p.call(ctx, ep, apiRequest{op: op, path: "/sandboxes/" + url.PathEscape(q.ID), ok: []int{http.StatusOK}, out: &w, oneOff: true}); err != nil {
		return nil, nil, err
	}
	in := w.info(p.FormatID(q), ep.region)
	return &in, w.Metadata, nil
}

// SetTimeoutByID sets a sandbox's remaining lifetime, counted from now,
// without taking it over: no connect call, temporary transport resources.
//
// Operation: POST /sandboxes/{sandboxID}/timeout
func (p *Platform) SetTimeoutByID(ctx context.Context, id string, timeout time.Duration, opts *CallOptions) error {
	const op = OpSetTimeout
	secs, err := seconds(op, "timeout", timeout)
	if err != nil {
		return err
	}
	q, ep, err := p.resolveID(op, id, opts)
	if err != nil {
		return err
	}
	_, err = p.call(ctx, ep, apiRequest{op: op, path: "/sandboxes/" + url.PathEscape(q.ID) + "/timeout",
		body: timeoutBody{Timeout: secs}, ok: []int{http.StatusNoContent, http.StatusOK}, oneOff: true})
	return err
}

// KillByID destroys a sandbox on temporary transport resources, without a
// connect call. A sandbox that is already gone is a not_found error.
//
// Operation: DELETE /sandboxes/{sandboxID}
func (p *Platform) KillByID(ctx context.Context, id string, opts *CallOptions) error {
	const op = OpKillSandbox
	q, ep, err := p.resolveID(op, id, opts)
	if err != nil {
		return err
	}
	_, err = p.call(ctx, ep, apiRequest{op: op, path: "/sandboxes/" + url.PathEscape(q.ID), ok: []int{http.StatusNoContent, http.StatusOK}, oneOff: true})
	return err
}

// ConnectOptions are the by-ID overrides plus the lifetime to ensure.
type ConnectOptions struct {
	CallOptions
	// Timeout is the lifetime to ensure, counted from now; 0 means
	// [DefaultSandboxTimeout]. The platform never shortens a running sandbox.
	Timeout time.Duration
	// KeepLifetime sends a timeout of 0 instead: a running sandbox's end
	// time is left exactly as it is, so reaching a sandbox the caller does
	// not own never renews it. Timeout is ignored.
	KeepLifetime bool
}

// Connect attaches to an existing sandbox (resuming a paused one) and
// returns a handle for its in-sandbox daemon. The caller does not own it.
// The timeout is always sent (0 for KeepLifetime).
//
// Operation: POST /sandboxes/{sandboxID}/connect (POST
// /v2/sandboxes/{sandboxID}/connect for a v2 provider)
func (p *Platform) Connect(ctx context.Context, id string, opts *ConnectOptions) (*Sandbox, error) {
	const op = OpConnectSandbox
	if opts == nil {
		opts = &ConnectOptions{}
	}
	var secs int64
	if !opts.KeepLifetime {
		timeout := opts.Timeout
		if timeout == 0 {
			timeout = DefaultSandboxTimeout
		}
		var err error
		if secs, err = seconds(op, "timeout", timeout); err != nil {
			return nil, err
		}
	}
	q, ep, err := p.resolveID(op, id, &opts.CallOptions)
	if err != nil {
		return nil, err
	}
	var w wireSandbox
	if _, err := p.call(ctx, ep, apiRequest{op: op, path: connectPath(ep.provider, q.ID),
		body: timeoutBody{Timeout: secs}, ok: []int{http.StatusOK, http.StatusCreated}, out: &w}); err != nil {
		return nil, err
	}
	w.SandboxID = q.ID
	if w.State == "" {
		w.State = StateRunning
	}
	return p.newHandle(ep, &w), nil
}

type timeoutBody struct {
	Timeout int64 `json:"timeout"`
}

// seconds converts a lifetime to whole seconds (rounded up), within 1 s to 24 h.
func seconds(op, field string, d time.Duration) (int64, error) {
	if d <= 0 || d > MaxTimeout {
		return 0, invalidArgument(op, field)
	}
	return int64(math.Ceil(d.Seconds())), nil
}
