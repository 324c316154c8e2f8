package fakeenvd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// userFrom picks the user from "Authorization: Basic base64(user:)", as
// envd does; without the header it is the default user.
func (d *Daemon) userFrom(h http.Header) (account, error) {
	name, _, ok := (&http.Request{Header: h}).BasicAuth()
	if !ok {
		name = ""
	}
	a, found := d.account(name)
	if !found {
		return account{}, connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("invalid username: '%s'", name))
	}
	return a, nil
}

// keepaliveInterval reads Keepalive-Ping-Interval (seconds); 0 = none.
func keepaliveInterval(h http.Header) time.Duration {
	n, err := strconv.Atoi(h.Get(envdapi.KeepaliveHeader))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// eventsAddress is E2B_EVENTS_ADDRESS: envd sets it to the orchestrator's
// in-sandbox address once /init names it (infra packages/envd/internal/api/
// init.go SetupHyperloop), which is 192.0.2.1 unless the cluster changes it
// (packages/orchestrator/pkg/sandbox/network/pool.go SANDBOX_ORCHESTRATOR_IP).
const eventsAddress = "http://192.0.2.1"

// processEnv is the environment of a new process as envd builds it (infra
// packages/envd/internal/services/process/handler/handler.go): PATH, HOME,
// USER and LOGNAME, then envd's defaults (E2B_SANDBOX from main.go;
// E2B_SANDBOX_ID and E2B_TEMPLATE_ID from host/mmds.go; E2B_EVENTS_ADDRESS
// from api/init.go; the sandbox's envVars from /init), then the request's
// (later values win).
func (d *Daemon) processEnv(a account, envs map[string]string) []string {
	env := []string{"PATH=" + defaultPath, "HOME=" + a.home, "USER=" + a.name, "LOGNAME=" + a.name, "E2B_SANDBOX=true"}
	if d.cfg.SandboxID != "" {
		env = append(env, "E2B_SANDBOX_ID="+d.cfg.SandboxID)
	}
	if d.cfg.TemplateID != "" {
		env = append(env, "E2B_TEMPLATE_ID="+d.cfg.TemplateID)
	}
	env = append(env, "E2B_EVENTS_ADDRESS="+eventsAddress)
	for _, m := range []map[string]string{d.cfg.EnvVars, envs} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			env = append(env, k+"="+m[k])
		}
	}
	return env
}

// startProcess validates a Start request for user a and launches it.
func (d *Daemon) startProcess(a account, msg *envdapi.StartRequest, timeout time.Duration) (*process, *subscription, error) {
	cfg := msg.Process
	if cfg.Cmd == "" {
		return nil, nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process cmd must not be empty"))
	}
	dir := a.home
	if cfg.Cwd != nil && *cfg.Cwd != "" {
		var err error
		if dir, err = resolvePath(*cfg.Cwd, a); err != nil {
			return nil, nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
	}
	info, err := d.fs.Stat(dir)
	switch {
	case err != nil:
		return nil, nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("cwd '%s' does not exist", dir))
	case !info.IsDir():
		return nil, nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("cwd '%s' is not a directory", dir))
	}
	spec := ProcSpec{
		Argv: append([]string{cfg.Cmd}, cfg.Args...), Dir: dir, Env: d.processEnv(a, cfg.Envs),
		User: a.name, UID: a.uid, GID: a.gid, Home: a.home, Stdin: msg.Stdin == nil || *msg.Stdin,
	}
	if msg.Pty != nil {
		spec.PTY = &msg.Pty.Size
	}
	p, sub, err := d.procs.start(d.ctx, d.ctx.Done(), startSpec{runner: d.runner, proc: spec, config: cfg, tag: msg.Tag, timeout: timeout})
	if err != nil {
		return nil, nil, connect.NewError(connect.CodeInternal, err)
	}
	return p, sub, nil
}

func (d *Daemon) rpcStart(ctx context.Context, req *connect.Request[envdapi.StartRequest], stream *connect.ServerStream[envdapi.StartResponse]) error {
	a, err := d.userFrom(req.Header())
	if err != nil {
		return err
	}
	var timeout time.Duration
	if ms, err := strconv.ParseInt(req.Header().Get("Connect-Timeout-Ms"), 10, 64); err == nil && ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	p, sub, err := d.startProcess(a, req.Msg, timeout)
	if err != nil {
		return err
	}
	defer sub.cancel()
	send := func(ev envdapi.ProcessEvent) error { return stream.Send(&envdapi.StartResponse{Event: ev}) }
	if err := send(envdapi.ProcessEvent{Start: &envdapi.StartEvent{Pid: p.pid}}); err != nil {
		return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending start event: %w", err))
	}
	return d.cutIfGone(pump(ctx, d.ctx.Done(), sub, send, keepaliveInterval(req.Header()), p.deadlineErr))
}

// deadlineErr is how a Start stream ends once the process has ended: nil
// (send the end event), or, when the process was killed because the
// request's Connect-Timeout-Ms expired, deadline_exceeded. envd returns the
// request context's error there (infra packages/envd/internal/services/
// process/start.go: "case <-ctx.Done(): cancel(ctx.Err())"), so the SDKs
// raise their TimeoutError, never CommandExitError. Deciding it from the
// process rather than from whichever of the two timers fires first makes
// the answer the same every time.
func (p *process) deadlineErr() error {
	if p.timedOut.Load() {
		return connect.NewError(connect.CodeDeadlineExceeded, context.DeadlineExceeded)
	}
	return nil
}

func (d *Daemon) rpcConnect(ctx context.Context, req *connect.Request[envdapi.ConnectRequest], stream *connect.ServerStream[envdapi.ConnectResponse]) error {
	if _, err := d.userFrom(req.Header()); err != nil {
		return err
	}
	p, err := d.procs.get(req.Msg.Process)
	if err != nil {
		return err
	}
	sub := p.hub.subscribe()
	defer sub.cancel()
	send := func(ev envdapi.ProcessEvent) error { return stream.Send(&envdapi.ConnectResponse{Event: ev}) }
	if err := send(envdapi.ProcessEvent{Start: &envdapi.StartEvent{Pid: p.pid}}); err != nil {
		return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending start event: %w", err))
	}
	return d.cutIfGone(pump(ctx, d.ctx.Done(), sub, send, keepaliveInterval(req.Header()), nil))
}

// errGone ends a stream whose sandbox was killed or expired.
var errGone = errors.New("sandbox is gone")

// cutIfGone passes err on, except errGone: then it drops the connection
// mid-stream, as the platform does when a sandbox's VM goes away (the
// client sees the body end without a Connect end-of-stream message; the
// E2B SDK then probes /health and reports the sandbox killed). It panics
// with http.ErrAbortHandler, which net/http turns into a silent close.
func (d *Daemon) cutIfGone(err error) error {
	if errors.Is(err, errGone) {
		panic(http.ErrAbortHandler)
	}
	return err
}

// pump forwards a subscription's events to a stream until the end event,
// sending keepalives when nothing else was sent for a whole interval. The
// process keeps running when the client goes away. Once gone is closed
// (the daemon was closed) it sends nothing more and returns errGone. When
// endErr (may be nil) returns an error at the end event, the stream ends
// with that error instead of the event.
func pump(ctx context.Context, gone <-chan struct{}, sub *subscription, send func(envdapi.ProcessEvent) error, keepalive time.Duration, endErr func() error) error {
	var tick <-chan time.Time
	var ticker *time.Ticker
	if keepalive > 0 {
		ticker = time.NewTicker(keepalive)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return errGone
		case <-tick:
			if err := send(envdapi.ProcessEvent{Keepalive: &struct{}{}}); err != nil {
				return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending keepalive: %w", err))
			}
		case ev, ok := <-sub.ch:
			select {
			case <-gone:
				return errGone
			default:
			}
			if !ok {
				return connect.NewError(connect.CodeUnavailable, errors.New("process event stream aborted"))
			}
			if ev.End != nil && endErr != nil {
				if err := endErr(); err != nil {
					return err
				}
			}
			if err := send(ev); err != nil {
				return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending event: %w", err))
			}
			if ev.End != nil {
				return nil
			}
			if ticker != nil {
				ticker.Reset(keepalive)
			}
		}
	}
}

func (d *Daemon) rpcList(_ context.Context, req *connect.Request[envdapi.ListRequest]) (*connect.Response[envdapi.ListResponse], error) {
	if _, err := d.userFrom(req.Header()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdapi.ListResponse{Processes: d.Processes()}), nil
}

func (d *Daemon) rpcSendInput(ctx context.Context, req *connect.Request[envdapi.SendInputRequest]) (*connect.Response[envdapi.SendInputResponse], error) {
	p, err := d.procs.get(req.Msg.Process)
	if err != nil {
		return nil, err
	}
	in := req.Msg.Input
	// Messages as envd's handler.go WriteStdin / WriteTty.
	switch {
	case in.Stdin != nil && p.tty:
		return nil, connect.NewError(connect.CodeInternal, errors.New("error writing to stdin: stdin not enabled or closed"))
	case in.Stdin != nil:
		if err := p.writeStdin(ctx, in.Stdin); err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("error writing to stdin: %w", err))
		}
	case in.Pty != nil && p.tty:
		if err := p.writeStdin(ctx, in.Pty); err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("error writing to tty: %w", err))
		}
	case in.Pty != nil:
		return nil, connect.NewError(connect.CodeInternal, errors.New("error writing to tty: tty not assigned to process — input should be written to the stdin, not the tty"))
	default:
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("invalid input type <nil>"))
	}
	return connect.NewResponse(&envdapi.SendInputResponse{}), nil
}

func (d *Daemon) rpcSendSignal(_ context.Context, req *connect.Request[envdapi.SendSignalRequest]) (*connect.Response[envdapi.SendSignalResponse], error) {
	p, err := d.procs.get(req.Msg.Process)
	if err != nil {
		return nil, err
	}
	switch req.Msg.Signal {
	case envdapi.SignalSIGKILL:
		p.signal(syscall.SIGKILL)
	case envdapi.SignalSIGTERM:
		p.signal(syscall.SIGTERM)
	default:
		return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("invalid signal: %s", req.Msg.Signal))
	}
	return connect.NewResponse(&envdapi.SendSignalResponse{}), nil
}

func (d *Daemon) rpcCloseStdin(_ context.Context, req *connect.Request[envdapi.CloseStdinRequest]) (*connect.Response[envdapi.CloseStdinResponse], error) {
	p, err := d.procs.get(req.Msg.Process)
	if err != nil {
		return nil, err
	}
	if err := p.closeStdin(); err != nil {
		return nil, connect.NewError(connect.CodeUnknown, fmt.Errorf("error closing stdin: %w", err))
	}
	return connect.NewResponse(&envdapi.CloseStdinResponse{}), nil
}

// rpcUpdate resizes a process's terminal (infra packages/envd/internal/
// services/process/update.go).
func (d *Daemon) rpcUpdate(_ context.Context, req *connect.Request[envdapi.UpdateRequest]) (*connect.Response[envdapi.UpdateResponse], error) {
	p, err := d.procs.get(req.Msg.Process)
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		if err := p.proc.Resize(req.Msg.Pty.Size); err != nil {
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("error resizing tty: %w", err))
		}
	}
	return connect.NewResponse(&envdapi.UpdateResponse{}), nil
}
