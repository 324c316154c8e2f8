//go:build linux

package nsexec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// Probe starts one sandbox and runs `true` in it, and says why when that
// fails (not Linux, no privilege, no overlay, ...). Callers run it once
// before serving, so that the namespace mode never fails later, quietly.
func Probe(ctx context.Context, opts Options) error {
	s, err := Start(opts, fakeenvd.Config{SandboxID: "probe"})
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.run(ctx, "true")
	if err != nil {
		return fmt.Errorf("nsexec: running true in a sandbox: %w", err)
	}
	if res.code != 0 {
		return fmt.Errorf("nsexec: true exited %d in a sandbox: %s", res.code, strings.TrimSpace(res.stderr))
	}
	return nil
}

// result is what a process run through the daemon produced.
type result struct {
	code           int32
	stdout, stderr string
}

// run runs cmd with args as the default user through the sandbox's daemon,
// as a client of envd would, and collects its output.
func (s *Sandbox) run(ctx context.Context, cmd string, args ...string) (result, error) {
	c := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](
		&http.Client{Transport: s.transport}, "http://envd"+envdapi.ProcessStartProcedure, connect.WithCodec(envdapi.Codec{}))
	stream, err := c.CallServerStream(ctx, connect.NewRequest(&envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: cmd, Args: args}}))
	if err != nil {
		return result{}, err
	}
	defer stream.Close()
	var out, errOut strings.Builder
	for stream.Receive() {
		ev := stream.Msg().Event
		if ev.Data != nil {
			out.Write(ev.Data.Stdout)
			errOut.Write(ev.Data.Stderr)
		}
		if ev.End != nil {
			return result{code: ev.End.ExitCode, stdout: out.String(), stderr: errOut.String()}, nil
		}
	}
	if err := stream.Err(); err != nil {
		return result{}, err
	}
	return result{}, errors.New("the process stream ended without an end event")
}
