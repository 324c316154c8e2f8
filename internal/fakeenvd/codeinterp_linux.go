//go:build linux

package fakeenvd

import (
	"context"
	"os/exec"
	"strings"
	"syscall"

	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
)

// ProcessCodeInterpreter returns the code interpreter of a daemon made by
// [NewOS]: every python and javascript context is a real python3 or node
// process, and bash a real bash, each started as the default user with
// that user's environment (as [Daemon.CodeInterpreter]'s kernels are).
// Closing the daemon closes it, which ends every kernel process.
func (d *Daemon) ProcessCodeInterpreter() *fakecodeinterp.Server {
	a := d.cfg.accounts()[1]
	env := map[string]string{}
	for _, kv := range d.processEnv(a, nil) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	procs := &fakecodeinterp.Processes{Prepare: func(cmd *exec.Cmd) {
		cred := &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid), Groups: []uint32{}}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}}
	srv := fakecodeinterp.New(fakecodeinterp.Config{EnvVars: env, Processes: procs, Shell: procs.Shell()})
	context.AfterFunc(d.ctx, srv.Close)
	return srv
}
