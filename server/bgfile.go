package server

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Background commands of modern requests keep their output in the
// sandbox, not in the server: any replica serves any read (HANDLE-2). A
// command runs as
//
//	/bin/bash -l -c 'exec >"$D/out" 2>"$D/err"; trap '\''sandboxkit_status=$?; [ -e "$D/killed" ] || echo $sandboxkit_status >"$D/exit"'\'' EXIT; eval "$SANDBOXKIT_BG_COMMAND"'
//
// in the directory D named after the command's 128 random bits, which also
// holds the principal that started it (HANDLE-1), written before the
// command starts. The process carries the same random value as its envd
// tag, so that a replica finds it (to tell whether it runs, and to signal
// it) without having started it.

// bgDirRoot holds the directories of modern background commands.
const bgDirRoot = "/tmp/.sandboxkit/bg/"

// bgWrapper is the shell line that runs a modern background command. The
// command runs in the wrapper's own shell, not a subshell: envd signals
// only the process it started, so kill_background_command must reach the
// shell that runs the command's own lines (BG-3). Against a real bash a
// subshell outlived the killed wrapper and went on running the command.
// The EXIT trap writes the exit file even when the command says "exit".
// bash runs it on SIGTERM too, with the status of the last command before
// the signal, so kill writes the file "killed" first and the trap then
// writes nothing: a killed command has no exit file (exit_code -1).
// Processes the command started may still outlive it, until the sandbox
// ends.
const bgWrapper = `exec >"$SANDBOXKIT_BG_DIR/out" 2>"$SANDBOXKIT_BG_DIR/err"; trap 'sandboxkit_status=$?; [ -e "$SANDBOXKIT_BG_DIR/killed" ] || echo $sandboxkit_status >"$SANDBOXKIT_BG_DIR/exit"' EXIT; eval "$SANDBOXKIT_BG_COMMAND"`

// fileCommand is a modern background command, as its command_id names it.
type fileCommand struct {
	key       string // 32 hex digits: 128 random bits
	sandboxID string
}

func (c fileCommand) dir() string { return bgDirRoot + c.key }

// id is the command_id: "bg-", the key, "." and the sandbox ID in base64url.
func (c fileCommand) id() string {
	return "bg-" + c.key + "." + base64.RawURLEncoding.EncodeToString([]byte(c.sandboxID))
}

// parseFileCommand reads a modern command_id; ok is false for any other
// form (a legacy one, or garbage).
func parseFileCommand(id string) (fileCommand, bool) {
	rest, ok := strings.CutPrefix(id, "bg-")
	if !ok {
		return fileCommand{}, false
	}
	key, enc, ok := strings.Cut(rest, ".")
	if !ok || len(key) != 32 {
		return fileCommand{}, false
	}
	sid, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(sid) == 0 {
		return fileCommand{}, false
	}
	return fileCommand{key: key, sandboxID: string(sid)}, true
}

// startFileCommand starts a modern background command on the reached
// sandbox and returns its command_id.
func startFileCommand(ctx context.Context, principal string, r *reached, a args) (string, error) {
	c := fileCommand{key: randomHex(16), sandboxID: r.id}
	if _, err := r.envd.WriteText(ctx, c.dir()+"/principal", principal); err != nil {
		return "", err
	}
	envs := a.strMap("envs")
	if envs == nil {
		envs = map[string]string{}
	}
	envs["SANDBOXKIT_BG_COMMAND"] = a.str("command")
	envs["SANDBOXKIT_BG_DIR"] = c.dir()
	err := startDetached(ctx, r.envd, &sandbox.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", bgWrapper},
		Envs: envs, Cwd: a.str("cwd"), Tag: c.key})
	if err != nil {
		return "", err
	}
	return c.id(), nil
}

// startDetached starts a process that outlives the call. Its stream is
// opened on a context without the call's deadline, since the daemon ends
// a process when its stream's deadline passes (Connect-Timeout-Ms); the
// call's provider deadline (budget.go) bounds only the wait for the start.
// A process that started just as that deadline passed is killed: the
// caller gets no command_id for it.
func startDetached(ctx context.Context, envd *sandbox.Envd, cfg *sandbox.ProcessConfig) error {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	st, err := envd.StartProcess(sctx, cfg)
	if stop() {
		if err != nil {
			return err
		}
		return st.Close() // the output goes to files; closing the stream leaves the process running
	}
	// The call's deadline passed, or its client went away, first.
	if st != nil {
		_ = st.Close()
		_ = envd.SendSignal(context.WithoutCancel(ctx), st.Pid(), sandbox.SIGKILL) // a unary call: bounded by the request timeout
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &sandbox.Error{Op: sandbox.OpProcessStart, Category: sandbox.Timeout} // ERR-1
	}
	return &sandbox.Error{Op: sandbox.OpProcessStart, Category: sandbox.Unavailable}
}

// reachFileCommand resolves a modern command_id for principal: its sandbox
// through the lease rules (HANDLE-1), then the principal the command was
// started by. An unknown, foreign or gone command is not found (HANDLE-3).
func reachFileCommand(ctx context.Context, d *Deps, principal, id string) (fileCommand, *reached, error) {
	c, ok := parseFileCommand(id)
	if !ok {
		return c, nil, errUnknownModernCommand()
	}
	if _, err := canonicalID(d.Platform, c.sandboxID); err != nil {
		return c, nil, errUnknownModernCommand()
	}
	r, err := reachModern(ctx, d, &modernCall{principal: principal}, args{"sandbox_id": c.sandboxID})
	if err != nil {
		if isNotFound(err) {
			return c, nil, errUnknownModernCommand()
		}
		return c, nil, err
	}
	owner, _, err := r.envd.ReadFile(ctx, c.dir()+"/principal", 256)
	if err != nil || string(owner) != principal {
		if err == nil || isNotFound(err) {
			return c, r, errUnknownModernCommand()
		}
		return c, r, err
	}
	return c, r, nil
}

func errUnknownModernCommand() *ToolError {
	return &ToolError{Category: sandbox.NotFound, Code: codeUnknownCommand, Field: "command_id", Recovery: hintUnknownCmdModern}
}

// pid returns the command's process ID while it runs (found by its tag),
// or 0 once it has ended.
func (c fileCommand) pid(ctx context.Context, r *reached) (uint32, error) {
	procs, err := r.envd.ListProcesses(ctx)
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		if p.Tag == c.key {
			return p.Pid, nil
		}
	}
	return 0, nil
}

// exitCode reads the exit status the wrapper wrote; ok is false while
// there is none.
func (c fileCommand) exitCode(ctx context.Context, r *reached) (code int, ok bool, err error) {
	data, _, err := r.envd.ReadFile(ctx, c.dir()+"/exit", 32)
	if isNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if perr != nil {
		return 0, false, nil // being written
	}
	return n, true, nil
}

// status tells whether the command still runs and, once it ended, its exit
// code (-1 when it ended without writing one: killed by a signal).
func (c fileCommand) status(ctx context.Context, r *reached) (running bool, exit *int, err error) {
	if code, ok, err := c.exitCode(ctx, r); err != nil || ok {
		return false, &code, err
	}
	pid, err := c.pid(ctx, r)
	if err != nil || pid != 0 {
		return pid != 0, nil, err
	}
	// Ended: the exit file may have been written since the first look.
	code, ok, err := c.exitCode(ctx, r)
	if err != nil {
		return false, nil, err
	}
	if !ok {
		code = -1
	}
	return false, &code, nil
}

// readFrom reads a stream's file from offset, at most max bytes; more is
// true when the file holds more after what was read.
func (c fileCommand) readFrom(ctx context.Context, r *reached, stream string, offset int64, max int) (data []byte, more bool, err error) {
	if max <= 0 {
		// No room left: only whether more waits.
		all, _, err := r.envd.ReadFile(ctx, c.dir()+"/"+stream, offset+1)
		if err != nil && !isNotFound(err) {
			return nil, false, err
		}
		return nil, int64(len(all)) > offset, nil
	}
	all, truncated, err := r.envd.ReadFile(ctx, c.dir()+"/"+stream, offset+int64(max))
	if isNotFound(err) {
		return nil, false, nil // not created yet
	}
	if err != nil {
		return nil, false, err
	}
	if int64(len(all)) <= offset {
		return nil, truncated, nil
	}
	return all[offset:], truncated, nil
}

// read is get_background_command on a modern command: the status first,
// so that output read after an end is complete, then the output after the
// cursor, at most maxBytes of both streams together (BG-2).
func (c fileCommand) read(ctx context.Context, r *reached, cur sandbox.Cursor, maxBytes int) (any, error) {
	running, exit, err := c.status(ctx, r)
	if err != nil {
		return nil, err
	}
	out, moreOut, err := c.readFrom(ctx, r, "out", cur.Stdout, maxBytes)
	if err != nil {
		return nil, err
	}
	errb, moreErr, err := c.readFrom(ctx, r, "err", cur.Stderr, maxBytes-len(out))
	if err != nil {
		return nil, err
	}
	next := sandbox.Cursor{Stdout: cur.Stdout + int64(len(out)), Stderr: cur.Stderr + int64(len(errb))}
	return backgroundOutput{running, exit, string(out), string(errb), formatCursor(next), moreOut || moreErr}, nil
}

// kill signals a running modern command; one that ended is left alone.
// The file "killed" goes first, so that the wrapper's EXIT trap, which
// bash runs on SIGTERM, writes no exit status of success (bgWrapper).
func (c fileCommand) kill(ctx context.Context, r *reached, sig sandbox.Signal) error {
	pid, err := c.pid(ctx, r)
	if err != nil || pid == 0 {
		return err
	}
	if _, err := r.envd.WriteText(ctx, c.dir()+"/killed", string(sig)); err != nil {
		return err
	}
	return r.envd.SendSignal(ctx, pid, sig)
}

// backgroundOutput is get_background_command's result (BG-2).
type backgroundOutput struct {
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	NextCursor string `json:"next_cursor"`
	Truncated  bool   `json:"truncated"`
}
