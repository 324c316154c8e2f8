package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
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

// decodeOptionalJSON decodes the request body into v; an empty body
// leaves v as it is, as for a route whose requestBody is optional.
func decodeOptionalJSON(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
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

// pathIDBody reads the sandbox ID of the request's path and its optional
// JSON body into body: the prologue of a handler of one sandbox. On a bad
// ID or body it has written the error, and returns false.
func (p *Provider) pathIDBody(w http.ResponseWriter, r *http.Request, body any) (string, bool) {
	id, ok := p.pathID(w, r)
	if !ok {
		return "", false
	}
	if err := decodeOptionalJSON(r, body); err != nil {
		p.parseError(w, r, err)
		return "", false
	}
	return id, true
}

// onVisible runs f on sandbox id under the provider's lock, as update
// does, and returns f's reply; a sandbox unknown or no longer visible is
// 404 without f.
func (p *Provider) onVisible(id string, f func(s *sandboxRecord, now time.Time) (reply, []Daemon)) reply {
	var rep reply
	p.update(func(now time.Time) []Daemon {
		s := p.sandboxes[id]
		if s == nil || !s.state.visible() {
			rep = notFound(id)
			return nil
		}
		var stop []Daemon
		rep, stop = f(s, now)
		return stop
	})
	return rep
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

// handleCreateV1 serves POST /sandboxes (NewSandbox): "timeout" defaults to
// 15 s and the daemon requires an access token only with "secure": true.
func (p *Provider) handleCreateV1(w http.ResponseWriter, r *http.Request) {
	p.handleCreate(w, r, false)
}

// handleCreateV2 serves POST /v2/sandboxes (NewSandboxV2, e2b@2.51.0
// index.d.ts:2389): every sandbox is secured and "timeout" defaults to 300 s.
func (p *Provider) handleCreateV2(w http.ResponseWriter, r *http.Request) {
	p.handleCreate(w, r, true)
}

// handleCreate serves both create routes.
func (p *Provider) handleCreate(w http.ResponseWriter, r *http.Request, v2 bool) {
	schema := "NewSandbox"
	if v2 {
		schema = "NewSandboxV2"
	}
	var body newSandboxBody
	if err := decodeJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	if body.TemplateID == "" {
		p.validationError(w, r, fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: property "templateID" is missing`, schema))
		return
	}
	if !p.acceptResources {
		for _, f := range []struct {
			name string
			v    *int64
		}{{"cpuCount", body.CPUCount}, {"memoryMB", body.MemoryMB}} {
			if f.v != nil {
				p.validationError(w, r, fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: property %q is unsupported`, schema, f.name))
				return
			}
		}
	}
	if detail, ok := checkCreateShapes(&body, schema); !ok {
		p.validationError(w, r, detail)
		return
	}
	alias, tmpl, ok := p.lookupTemplate(body.TemplateID)
	var snap *snapshotRecord
	if !ok {
		p.update(func(time.Time) []Daemon { snap = p.findSnapshotLocked(body.TemplateID); return nil })
		if snap == nil {
			p.writeError(w, r, http.StatusNotFound, fmt.Sprintf("template '%s' not found", body.TemplateID))
			return
		}
		alias, tmpl = snap.templateID, snap.tmpl
	}
	timeout := DefaultCreateTimeout
	if v2 {
		timeout = DefaultCreateTimeoutV2
	}
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
		p.validationError(w, r, fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: Error at "/cpuCount": number must be at least 1`, schema))
		return
	}
	if body.MemoryMB != nil && *body.MemoryMB < 128 {
		p.validationError(w, r, fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: Error at "/memoryMB": number must be at least 128`, schema))
		return
	}
	if rep, full := p.limitReached(); full {
		p.write(w, r, rep)
		return
	}

	// v2 has no "secure": all system communication with the sandbox is
	// always secured (index.d.ts:2389); v1 keeps it opt-in.
	secure := v2 || (body.Secure != nil && *body.Secure)
	envVars := body.EnvVars
	if snap != nil {
		envVars = map[string]string{} // the snapshot's environment, then the request's
		maps.Copy(envVars, snap.envVars)
		maps.Copy(envVars, body.EnvVars)
	}
	s := p.newRecord(newSandboxID(), alias, tmpl, secure, body.Metadata, envVars)
	s.allowInternetAccess = body.AllowInternetAccess
	s.autoPause = body.AutoPause != nil && *body.AutoPause
	s.autoResume = body.AutoResume != nil && body.AutoResume.Enabled != nil && *body.AutoResume.Enabled
	if len(body.Network) > 0 && string(body.Network) != "null" {
		s.network = slices.Clone(body.Network)
	}
	s.volumeMounts = slices.Clone(body.VolumeMounts)
	if len(body.MCP) > 0 && string(body.MCP) != "null" {
		s.mcp = slices.Clone(body.MCP)
	}
	if body.CPUCount != nil {
		s.cpuCount = int(*body.CPUCount)
	}
	if body.MemoryMB != nil {
		s.memoryMB = int(*body.MemoryMB)
	}
	s.state = StateRunning
	s.daemon = p.startDaemon(s)
	if im, ok := s.daemon.(imager); ok && snap != nil && snap.image != nil {
		im.Restore(snap.image) // a sandbox from a snapshot starts as its source was
	}

	rep := p.admit(s, timeout)
	p.write(w, r, rep)
}

// checkCreateShapes checks the create fields the fake keeps as they came:
// "network" and "mcp" must be objects, every volume mount needs a name and
// a path. It returns the validator's detail when one is wrong.
func checkCreateShapes(body *newSandboxBody, schema string) (string, bool) {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"network", body.Network}, {"mcp", body.MCP}, {"iam", body.IAM}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(f.raw, &obj) != nil {
			return fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: Error at "/%s": value must be an object`, schema, f.name), false
		}
	}
	for i, m := range body.VolumeMounts {
		if m.Name == "" || m.Path == "" {
			return fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: Error at "/volumeMounts/%d": property "name" and "path" are required`, schema, i), false
		}
	}
	if body.AutoResume != nil && body.AutoResume.Enabled == nil {
		return fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: Error at "/autoResume": property "enabled" is missing`, schema), false
	}
	return "", true
}

// limitReply is the 429 the platform gives beyond the concurrency limit.
// admit starts s running from now for timeout, under the concurrency
// limit: past the limit it stops s's daemon and returns the limit's reply;
// otherwise 201 with the sandbox, read under the provider's lock.
func (p *Provider) admit(s *sandboxRecord, timeout time.Duration) reply {
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
	return rep
}

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
	p.write(w, r, p.onVisible(id, func(s *sandboxRecord, _ time.Time) (reply, []Daemon) {
		return reply{status: http.StatusOK, body: s.withOmissions(s.detailJSON())}, nil
	}))
}

// handleKill serves DELETE /sandboxes/{sandboxID}.
func (p *Provider) handleKill(w http.ResponseWriter, r *http.Request) {
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	p.write(w, r, p.onVisible(id, func(s *sandboxRecord, _ time.Time) (reply, []Daemon) {
		return reply{status: http.StatusNoContent}, p.removeLocked(s)
	}))
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

// handleConnectV1 serves POST /sandboxes/{sandboxID}/connect
// (ConnectSandbox): "timeout" is required.
func (p *Provider) handleConnectV1(w http.ResponseWriter, r *http.Request) {
	var body timeoutBody
	if err := decodeJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	if body.Timeout == nil {
		p.validationError(w, r, `request body has an error: doesn't match schema #/components/schemas/ConnectSandbox: property "timeout" is missing`)
		return
	}
	p.handleConnect(w, r, "ConnectSandbox", *body.Timeout)
}

// handleConnectV2 serves POST /v2/sandboxes/{sandboxID}/connect
// (ConnectSandboxV2, e2b@2.51.0 index.d.ts:2219): the body is optional and
// "timeout" defaults to 300 s. "memory" is accepted; the fake's resume
// always keeps the daemon's state.
func (p *Provider) handleConnectV2(w http.ResponseWriter, r *http.Request) {
	var body connectV2Body
	if err := decodeOptionalJSON(r, &body); err != nil {
		p.parseError(w, r, err)
		return
	}
	timeout := int64(DefaultConnectTimeoutV2 / time.Second)
	if body.Timeout != nil {
		timeout = *body.Timeout
	}
	p.handleConnect(w, r, "ConnectSandboxV2", timeout)
}

// handleConnect serves both connect routes: a running sandbox's lifetime
// is extended (never shortened) and 200 returned; a paused one is resumed
// and 201 returned.
func (p *Provider) handleConnect(w http.ResponseWriter, r *http.Request, schema string, timeout int64) {
	switch {
	case timeout < 0:
		p.validationError(w, r, fmt.Sprintf(`request body has an error: doesn't match schema #/components/schemas/%s: Error at "/timeout": number must be at least 0`, schema))
		return
	case timeout > int64(p.maxTimeout/time.Second):
		p.writeError(w, r, http.StatusBadRequest, msgTimeoutTooLong(p))
		return
	}
	d := time.Duration(timeout) * time.Second
	id, ok := p.pathID(w, r)
	if !ok {
		return
	}
	var rep reply
	var reboot Rebooter
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
			if r, ok := s.daemon.(Rebooter); ok && s.coldResume {
				reboot = r
			}
			s.coldResume = false
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
	if reboot != nil {
		reboot.Reboot()
	}
	p.write(w, r, rep)
}
