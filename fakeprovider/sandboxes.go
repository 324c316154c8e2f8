package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxRequestBody bounds the control-plane JSON bodies the fake decodes.
const maxRequestBody = 1 << 20

// decodeJSON decodes the request body into v.
func decodeJSON(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}

// parseError answers a body that is not the expected JSON, with E2B's
// message (which quotes the decoder's own, without our wrapping).
func (p *Provider) parseError(w http.ResponseWriter, r *http.Request, err error) {
	for u := err; u != nil; u = unwrapOnce(u) {
		err = u
	}
	p.writeError(w, r, http.StatusBadRequest, msgParse(err))
}

// unwrapOnce returns the error err wraps, or nil.
func unwrapOnce(err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return nil
	}
	return u.Unwrap()
}

// validationError answers a request that breaks the OpenAPI schema, as E2B's
// request validator does.
func (p *Provider) validationError(w http.ResponseWriter, r *http.Request, detail string) {
	p.writeError(w, r, http.StatusBadRequest, msgValidationPrefix+detail)
}

// pathID returns the reduced sandbox ID of the request path, or answers 400
// and returns false.
func (p *Provider) pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id, err := shortID(r.PathValue("sandboxID"))
	if err != nil {
		p.writeError(w, r, http.StatusBadRequest, msgInvalidSandboxID)
		return "", false
	}
	return id, true
}

// clampEnd returns now+d, capped at s's maximum lifetime.
func (p *Provider) clampEnd(s *sandboxRecord, now time.Time, d time.Duration) time.Time {
	end := now.Add(d)
	if maxEnd := s.startedAt.Add(p.maxLifetime); end.After(maxEnd) {
		return maxEnd
	}
	return end
}

// reply is a response decided under the store lock and written after it.
type reply struct {
	status int
	msg    string // error message when status >= 400
	body   any    // JSON body on success; nil for no body
}

// write sends rep.
func (p *Provider) write(w http.ResponseWriter, r *http.Request, rep reply) {
	switch {
	case rep.status >= 400:
		p.writeError(w, r, rep.status, rep.msg)
	case rep.body != nil:
		p.writeJSON(w, rep.status, rep.body)
	default:
		w.WriteHeader(rep.status)
	}
}

// notFound is the reply for an unknown, expired or killed sandbox.
func notFound(id string) reply {
	return reply{status: http.StatusNotFound, msg: msgSandboxNotFound(id)}
}

// conflict is the reply for a sandbox that is changing state.
func conflict(id string, s State) reply {
	return reply{status: http.StatusConflict, msg: fmt.Sprintf("Sandbox %q is being %s", id, s.transitionVerb())}
}

// handleCreate serves POST /sandboxes.
func (p *Provider) handleCreate(w http.ResponseWriter, r *http.Request) {
	var body newSandboxBody
	if err := decodeJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	if body.TemplateID == "" {
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/NewSandbox: property "templateID" is missing`)
		return
	}
	if !p.acceptResources {
		for _, f := range []struct {
			name string
			v    *int64
		}{{"cpuCount", body.CPUCount}, {"memoryMB", body.MemoryMB}} {
			if f.v != nil {
				p.validationError(w, r, fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/NewSandbox: property %q is unsupported`, f.name))
				return
			}
		}
	}
	alias, tmpl, ok := p.lookupTemplate(body.TemplateID)
	if !ok {
		p.writeError(w, r, http.StatusNotFound, fmt.Sprintf("template '%s' not found", body.TemplateID))
		return
	}
	timeout := DefaultCreateTimeout
	if body.Timeout != nil {
		if *body.Timeout <= 0 {
			p.writeError(w, r, http.StatusBadRequest, msgTimeoutNotPositive)
			return
		}
		if *body.Timeout > int64(p.maxTimeout/time.Second) {
			p.writeError(w, r, http.StatusBadRequest, msgTimeoutTooLong(p))
			return
		}
		timeout = time.Duration(*body.Timeout) * time.Second
	}
	if body.CPUCount != nil && *body.CPUCount < 1 {
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/NewSandbox: Error at "/cpuCount": number must be at least 1`)
		return
	}
	if body.MemoryMB != nil && *body.MemoryMB < 128 {
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/NewSandbox: Error at "/memoryMB": number must be at least 128`)
		return
	}
	if rep, full := p.limitReached(); full {
		p.write(w, r, rep)
		return
	}

	s := p.newRecord(newSandboxID(), alias, tmpl, body.Secure != nil && *body.Secure, body.Metadata, body.EnvVars)
	s.allowInternetAccess = body.AllowInternetAccess
	if body.CPUCount != nil {
		s.cpuCount = int(*body.CPUCount)
	}
	if body.MemoryMB != nil {
		s.memoryMB = int(*body.MemoryMB)
	}
	s.state = StateRunning
	s.daemon = p.startDaemon(s)

	var rep reply
	p.update(func(now time.Time) []Daemon {
		if p.runningCountLocked() >= p.limit {
			rep = p.limitReply()
			if s.daemon != nil {
				return []Daemon{s.daemon}
			}
			return nil
		}
		s.startedAt = now
		s.endAt = p.clampEnd(s, now, timeout)
		p.sandboxes[s.id] = s
		rep = reply{status: http.StatusCreated, body: s.sandboxJSON()}
		return nil
	})
	p.write(w, r, rep)
}

// limitReply is the 429 the platform gives beyond the concurrency limit.
func (p *Provider) limitReply() reply {
	return reply{status: http.StatusTooManyRequests, msg: fmt.Sprintf(msgSandboxLimit, p.limit)}
}

// limitReached reports whether no sandbox may start now, and the reply to give.
func (p *Provider) limitReached() (reply, bool) {
	var full bool
	p.update(func(time.Time) []Daemon {
		full = p.runningCountLocked() >= p.limit
		return nil
	})
	if full {
		return p.limitReply(), true
	}
	return reply{}, false
}

// handleGet serves GET /sandboxes/{sandboxID}.
func (p *Provider) handleGet(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var rep reply
	p.update(func(time.Time) []Daemon {
		s := p.sandboxes[id]
		if s == nil || !s.state.visible() {
			rep = notFound(id)
			return nil
		}
		rep = reply{status: http.StatusOK, body: s.withOmissions(s.detailJSON())}
		return nil
	})
	p.write(w, r, rep)
}

// handleKill serves DELETE /sandboxes/{sandboxID}.
func (p *Provider) handleKill(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var rep reply
	p.update(func(time.Time) []Daemon {
		s := p.sandboxes[id]
		if s == nil || !s.state.visible() {
			rep = notFound(id)
			return nil
		}
		rep = reply{status: http.StatusNoContent}
		return p.removeLocked(s)
	})
	p.write(w, r, rep)
}

// handleSetTimeout serves POST /sandboxes/{sandboxID}/timeout.
func (p *Provider) handleSetTimeout(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var body timeoutBody
	if err := decodeJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	if body.Timeout == nil {
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/SandboxTimeoutRequest: property "timeout" is missing`)
		return
	}
	d := time.Duration(max(*body.Timeout, 0)) * time.Second
	var rep reply
	p.update(func(now time.Time) []Daemon {
		s := p.sandboxes[id]
		switch {
		case s == nil || s.state == StatePaused:
			rep = notFound(id)
		case s.state != StateRunning:
			rep = conflict(id, s.state)
		case now.After(s.startedAt.Add(p.maxLifetime)):
			rep = reply{status: http.StatusBadRequest, msg: msgMaxInstanceLength}
		default:
			s.endAt = p.clampEnd(s, now, d)
			rep = reply{status: http.StatusNoContent}
		}
		return nil
	})
	p.write(w, r, rep)
}

// handleConnect serves POST /sandboxes/{sandboxID}/connect: a running
// sandbox's lifetime is extended (never shortened) and 200 returned; a
// paused one is resumed and 201 returned.
func (p *Provider) handleConnect(w http.ResponseWriter, r *http.Request) {
	var body timeoutBody
	if err := decodeJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	switch {
	case body.Timeout == nil:
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/ConnectSandbox: property "timeout" is missing`)
		return
	case *body.Timeout < 0:
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/ConnectSandbox: Error at "/timeout": number must be at least 0`)
		return
	case *body.Timeout > int64(p.maxTimeout/time.Second):
		p.writeError(w, r, http.StatusBadRequest, msgTimeoutTooLong(p))
		return
	}
	d := time.Duration(*body.Timeout) * time.Second
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var rep reply
	p.update(func(now time.Time) []Daemon {
		s := p.sandboxes[id]
		switch {
		case s == nil:
			rep = notFound(id)
		case s.state == StatePaused:
			if p.runningCountLocked() >= p.limit {
				rep = p.limitReply()
				return nil
			}
			s.state = StateRunning
			s.startedAt = now
			s.endAt = p.clampEnd(s, now, d)
			rep = reply{status: http.StatusCreated, body: s.sandboxJSON()}
		case s.state != StateRunning:
			rep = conflict(id, s.state)
		case now.After(s.startedAt.Add(p.maxLifetime)):
			rep = reply{status: http.StatusBadRequest, msg: msgMaxInstanceLength}
		default:
			if end := p.clampEnd(s, now, d); end.After(s.endAt) {
				s.endAt = end
			}
			rep = reply{status: http.StatusOK, body: s.sandboxJSON()}
		}
		return nil
	})
	p.write(w, r, rep)
}
