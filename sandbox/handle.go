package sandbox

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Sandbox is a managed handle on one sandbox, returned by [Platform.Create]
// and [Platform.Connect]. It keeps the sandbox's access tokens and domain for
// the in-sandbox daemon in unexported fields. It is safe for concurrent use.
type Sandbox struct {
	platform *Platform
	ep       endpoint
	id       QualifiedID

	envdAccessToken    string
	trafficAccessToken string
	domain             string
	envdVersion        string

	mu   sync.Mutex
	info Info
}

func (p *Platform) newHandle(ep endpoint, w *wireSandbox) *Sandbox {
	q := QualifiedID{Provider: ep.provider.ID, ID: w.SandboxID}
	s := &Sandbox{platform: p, ep: ep, id: q, envdVersion: w.EnvdVersion, domain: ep.provider.Domain}
	if w.EnvdAccessToken != nil {
		s.envdAccessToken = *w.EnvdAccessToken
	}
	if w.TrafficAccessToken != nil {
		s.trafficAccessToken = *w.TrafficAccessToken
	}
	if w.Domain != nil && *w.Domain != "" {
		s.domain = *w.Domain
	}
	s.info = w.info(p.FormatID(q), ep.region)
	return s
}

// ID returns the sandbox ID as a caller must pass it back: bare for the
// default provider, "provider:id" for any other.
func (s *Sandbox) ID() string { return s.platform.FormatID(s.id) }

// QualifiedID returns the provider and bare ID.
func (s *Sandbox) QualifiedID() QualifiedID { return s.id }

// Info returns the metadata last read from the platform.
func (s *Sandbox) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// RefreshInfo reads the sandbox's latest metadata and keeps it.
//
// Operation: GET /sandboxes/{sandboxID}
func (s *Sandbox) RefreshInfo(ctx context.Context) (*Info, error) {
	var w wireSandbox
	_, err := s.platform.call(ctx, s.ep, apiRequest{op: OpGetSandbox, path: s.path(""), ok: []int{http.StatusOK}, out: &w})
	if err != nil {
		return nil, err
	}
	in := w.info(s.ID(), s.ep.region)
	s.mu.Lock()
	s.info = in
	if w.Domain != nil && *w.Domain != "" {
		s.domain = *w.Domain
	}
	s.mu.Unlock()
	return &in, nil
}

// SetTimeout sets the sandbox's remaining lifetime, counted from now.
//
// Operation: POST /sandboxes/{sandboxID}/timeout
func (s *Sandbox) SetTimeout(ctx context.Context, timeout time.Duration) error {
	secs, err := seconds(OpSetTimeout, "timeout", timeout)
	if err != nil {
		return err
	}
	_, err = s.platform.call(ctx, s.ep, apiRequest{op: OpSetTimeout, path: s.path("/timeout"),
		body: timeoutBody{Timeout: secs}, ok: []int{http.StatusNoContent, http.StatusOK}})
	return err
}

// Kill destroys the sandbox. A sandbox that is already gone is a not_found error.
//
// Operation: DELETE /sandboxes/{sandboxID}
func (s *Sandbox) Kill(ctx context.Context) error {
	_, err := s.platform.call(ctx, s.ep, apiRequest{op: OpKillSandbox, path: s.path(""), ok: []int{http.StatusNoContent, http.StatusOK}})
	return err
}

func (s *Sandbox) path(suffix string) string {
	return "/sandboxes/" + url.PathEscape(s.id.ID) + suffix
}
