//go:build linux

package nsexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// Main runs the sandbox role of a re-run program and exits; in any other
// process it returns at once. Call it first thing in main and TestMain.
func Main() {
	var err error
	switch os.Getenv(roleEnv) {
	case roleInit:
		err = runInit()
	case roleEnvd:
		err = runEnvd()
	default:
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Files a sandbox's first process and its daemon inherit.
const (
	fdListener = 3 // the daemon's listening socket
	fdStatus   = 4 // the status pipe: readyLine, or nothing
	// fdPorts (5, ports_linux.go) is the port socket; only the first
	// process keeps it.
)

// runInit is the sandbox's first process (pid 1 of its namespace): it
// builds the root, starts the daemon with a reduced capability bounding
// set and reaps every orphan until the daemon ends.
func runInit() error {
	conf, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("reading the sandbox configuration: %w", err)
	}
	var c initConfig
	if err := json.Unmarshal(conf, &c); err != nil {
		return fmt.Errorf("reading the sandbox configuration: %w", err)
	}
	if err := setupRoot(c); err != nil {
		return err
	}
	ports, err := listenPorts()
	if err != nil {
		return err
	}
	go servePorts(ports)
	envdConf, err := json.Marshal(c.Envd)
	if err != nil {
		return err
	}
	pid, err := startEnvd(envdConf)
	if err != nil {
		return err
	}
	return reap(pid)
}

// startEnvd starts the daemon from a thread whose capability bounding set
// was reduced, so that it and every process it starts keep only keptCaps.
func startEnvd(conf []byte) (int, error) {
	runtime.LockOSThread() // never unlocked: the thread's bounding set is reduced
	if err := dropBoundingSet(); err != nil {
		return 0, err
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{roleEnv + "=" + roleEnvd}
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(conf), os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(fdListener, "listener"), os.NewFile(fdStatus, "status")}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the sandbox daemon: %w", err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	return cmd.Process.Pid, nil
}

// keptCaps is the capability bounding set of everything in a sandbox:
// what a container runtime's default profile keeps (enough for root to
// own files, change users and bind low ports); no CAP_SYS_ADMIN, module
// loading or raw I/O.
var keptCaps = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETPCAP, unix.CAP_NET_BIND_SERVICE,
	unix.CAP_SYS_CHROOT, unix.CAP_AUDIT_WRITE, unix.CAP_SETFCAP,
}

// dropBoundingSet removes every other capability from the calling
// thread's bounding set.
func dropBoundingSet() error {
	for c := uintptr(0); c <= unix.CAP_LAST_CAP; c++ {
		keep := false
		for _, k := range keptCaps {
			keep = keep || k == c
		}
		if keep {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d: %w", c, err)
		}
	}
	return nil
}

// reap waits for every child that ends (orphans are re-parented to pid
// 1) and returns when the daemon, pid envd, has ended.
func reap(envd int) error {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return fmt.Errorf("waiting for the sandbox daemon: %w", err)
		case pid == envd && ws.Exited() && ws.ExitStatus() == 0:
			return nil
		case pid == envd:
			return fmt.Errorf("the sandbox daemon ended: %v", syscall.WaitStatus(ws))
		}
	}
}

// runEnvd is the sandbox's daemon: the fake envd over the sandbox's real
// files and processes, served on the inherited socket.
func runEnvd() error {
	var c envdConfig
	if err := json.NewDecoder(os.Stdin).Decode(&c); err != nil {
		return fmt.Errorf("reading the daemon configuration: %w", err)
	}
	d, err := fakeenvd.NewOS(c.config())
	if err != nil {
		return err
	}
	if err := listenCodeInterpreter(d); err != nil {
		return err
	}
	ln, err := net.FileListener(os.NewFile(fdListener, "listener"))
	if err != nil {
		return fmt.Errorf("daemon socket: %w", err)
	}
	status := os.NewFile(fdStatus, "status")
	if _, err := io.WriteString(status, readyLine); err != nil {
		return fmt.Errorf("reporting ready: %w", err)
	}
	status.Close()
	srv := &http.Server{Handler: d, ErrorLog: log.New(io.Discard, "", 0)}
	return srv.Serve(ln)
}
