//go:build linux

package nsexec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// Sandbox is the host's end of one sandbox: an http.Handler proxying to
// the daemon inside. After Close every request gets the platform's 502.
type Sandbox struct {
	id        string
	dir       string
	portSock  string // the port socket (ports_linux.go); "" until started
	cmd       *exec.Cmd
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	closed    atomic.Bool
	once      sync.Once
}

// maxStderr bounds what is kept of a failed sandbox's error output.
const maxStderr = 4 << 10

// Start creates one sandbox serving cfg's envd (its SandboxID, TemplateID,
// AccessToken and EnvVars; other fields are ignored). It returns once the
// daemon inside serves, or with the reason the sandbox could not start.
func Start(opts Options, cfg fakeenvd.Config) (*Sandbox, error) {
	root := opts.RootFS
	if root == "" {
		root = "/"
	}
	dir, err := os.MkdirTemp(opts.WorkDir, "sandboxkit-ns-")
	if err != nil {
		return nil, fmt.Errorf("nsexec: sandbox directory: %w", err)
	}
	s := &Sandbox{id: cfg.SandboxID, dir: dir}
	if err := s.start(root, cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start re-runs this program as the sandbox's first process and waits for
// its daemon to report ready.
func (s *Sandbox) start(root string, cfg fakeenvd.Config) error {
	sock := filepath.Join(s.dir, "envd.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("nsexec: daemon socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	lnFile, err := ln.File()
	if err != nil {
		return fmt.Errorf("nsexec: daemon socket: %w", err)
	}
	defer lnFile.Close()
	portsFile, err := listenUnixFile(filepath.Join(s.dir, portSockName))
	if err != nil {
		return fmt.Errorf("nsexec: port socket: %w", err)
	}
	defer portsFile.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("nsexec: status pipe: %w", err)
	}
	defer statusR.Close()
	conf, err := json.Marshal(initConfig{RootFS: root, Dir: s.dir, Envd: envdConfig{
		SandboxID: cfg.SandboxID, TemplateID: cfg.TemplateID, AccessToken: cfg.AccessToken, EnvVars: cfg.EnvVars,
	}})
	if err != nil {
		statusW.Close()
		return fmt.Errorf("nsexec: %w", err)
	}
	var stderr limitedBuffer
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{roleEnv + "=" + roleInit}
	cmd.Stdin, cmd.Stderr = bytes.NewReader(conf), &stderr
	cmd.ExtraFiles = []*os.File{lnFile, statusW, portsFile} // fdListener, fdStatus, fdPorts
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWNET,
		Pdeathsig:  syscall.SIGKILL,
	}
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("nsexec: creating namespaces needs root (CAP_SYS_ADMIN): %w", err)
		}
		return fmt.Errorf("nsexec: starting the sandbox: %w", err)
	}
	s.cmd = cmd
	s.portSock = filepath.Join(s.dir, portSockName)
	line, _ := bufio.NewReader(statusR).ReadString('\n')
	if line != readyLine {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		s.cmd = nil
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(line)
		}
		return fmt.Errorf("nsexec: the sandbox did not start: %s", msg)
	}
	s.transport = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "envd"
		},
		Transport:     s.transport,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		// No log line: it would carry the request URL.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			fakeenvd.WriteGone(w, s.id)
		},
	}
	return nil
}

// listenUnixFile binds a Unix socket at name and returns its listening
// descriptor for a child to inherit; the socket file stays after it is
// closed here.
func listenUnixFile(name string) (*os.File, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	return ln.File()
}

// maxBuffered bounds the request body of an RPC that ServeHTTP reads
// before forwarding.
const maxBuffered = 64 << 20

// ServeHTTP forwards to the sandbox's daemon. The body of every request
// but an upload is read first: a Connect stream answers (and the proxy
// flushes its headers) before its request body has gone through, and an
// HTTP/1 server may close a request body once the answer has started,
// which would cut the stream. Uploads are answered only after their body.
func (s *Sandbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.closed.Load() {
		fakeenvd.WriteGone(w, s.id)
		return
	}
	if r.URL.Path != "/files" && r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBuffered))
		if err != nil {
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Del("Transfer-Encoding")
	}
	s.proxy.ServeHTTP(w, r)
}

// Close kills the sandbox's first process, which ends every process in
// its pid namespace and, with its mount namespace, the overlay; then it
// removes the writable layer. It may be called many times.
func (s *Sandbox) Close() {
	s.once.Do(func() {
		s.closed.Store(true)
		if s.cmd != nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
		if s.transport != nil {
			s.transport.CloseIdleConnections()
		}
		_ = os.RemoveAll(s.dir)
	})
}

// Pid is the host pid of the sandbox's first process.
func (s *Sandbox) Pid() int { return s.cmd.Process.Pid }

// limitedBuffer keeps the first maxStderr bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxStderr - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
