//go:build linux

package nsexec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How the host reaches a sandbox's own ports. A socket belongs to the
// network namespace it was created in, and the host cannot dial into the
// sandbox's loopback. So the sandbox's first process serves a second Unix
// socket, the port socket: for each connection the host writes a port
// number and a newline; the first process dials that port on its own
// loopback and answers one byte, portOK with the connected socket's
// descriptor attached (SCM_RIGHTS), or portFailed followed by the reason.
//
// Passing the descriptor, rather than relaying bytes over the envd
// socket, keeps the sandbox out of the data path: after the hand-over the
// host holds an ordinary TCP connection, half-closes and upgrades
// (WebSocket) work as on any socket, and no process inside the sandbox
// copies traffic or has to stay alive for it. Dialling from the first
// process, rather than by setns(2) on a host thread, keeps the host
// process (which may be a user's test binary) in its own namespaces.
const (
	portOK     byte = 0
	portFailed byte = 1
)

// fdPorts is the port socket's listener in a sandbox's first process.
const fdPorts = 5

// portSockName is the port socket's file in the sandbox's directory.
const portSockName = "ports.sock"

// ErrPortClosed says nothing listens on the sandbox port that was dialled.
var ErrPortClosed = errors.New("nothing listens on the sandbox port")

// portDialTimeout bounds the first process's dial of a loopback port:
// loopback answers at once, refused or accepted, unless the listener's
// backlog is full.
const portDialTimeout = 10 * time.Second

// listenPorts takes over the inherited port socket. It must run before
// the daemon starts, so that the daemon does not inherit it.
func listenPorts() (net.Listener, error) {
	f := os.NewFile(fdPorts, "ports")
	defer f.Close() // the listener holds a close-on-exec duplicate
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("port socket: %w", err)
	}
	return ln, nil
}

// servePorts answers the host's port requests until ln fails (the
// sandbox is ending).
func servePorts(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go answerPort(c.(*net.UnixConn))
	}
}

// answerPort reads one port number from c, dials it on the sandbox's
// loopback (IPv4, then IPv6) and hands the connection over.
func answerPort(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(portDialTimeout))
	line, err := bufio.NewReader(io.LimitReader(c, 16)).ReadString('\n')
	port, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil || port < 1 || port > 65535 {
		_, _ = c.Write(append([]byte{portFailed}, "bad port request"...))
		return
	}
	conn, err := dialLoopback(port)
	if err != nil {
		_, _ = c.Write(append([]byte{portFailed}, err.Error()...))
		return
	}
	defer conn.Close()
	f, err := conn.File()
	if err != nil {
		_, _ = c.Write(append([]byte{portFailed}, "duplicating the connection failed"...))
		return
	}
	defer f.Close()
	_, _, _ = c.WriteMsgUnix([]byte{portOK}, syscall.UnixRights(int(f.Fd())), nil)
}

// dialLoopback connects to port on 127.0.0.1, or on ::1 when only an
// IPv6 listener is there. Its error says only whether anything listens.
func dialLoopback(port int) (*net.TCPConn, error) {
	d := net.Dialer{Timeout: portDialTimeout}
	var err error
	for _, host := range []string{"127.0.0.1", "::1"} {
		var c net.Conn
		if c, err = d.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil {
			return c.(*net.TCPConn), nil
		}
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.ENETUNREACH) {
		return nil, fmt.Errorf("nothing listens on port %d in the sandbox", port)
	}
	return nil, fmt.Errorf("port %d in the sandbox: %w", port, err)
}

// DialPort connects to port on the sandbox's loopback, as the platform's
// edge reaches a port a process in the sandbox listens on. When nothing
// listens there the error wraps [ErrPortClosed].
func (s *Sandbox) DialPort(ctx context.Context, port int) (net.Conn, error) {
	if s.closed.Load() || s.portSock == "" {
		return nil, fmt.Errorf("nsexec: the sandbox is closed: %w", ErrPortClosed)
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "unix", s.portSock)
	if err != nil {
		return nil, fmt.Errorf("nsexec: the sandbox's port socket: %w", err)
	}
	c := raw.(*net.UnixConn)
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := fmt.Fprintf(c, "%d\n", port); err != nil {
		return nil, fmt.Errorf("nsexec: asking for port %d: %w", port, err)
	}
	buf, oob := make([]byte, 256), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	switch {
	case err != nil && n == 0:
		return nil, fmt.Errorf("nsexec: port %d: %w", port, err)
	case buf[0] == portOK:
		return connFromRights(oob[:oobn])
	}
	rest, _ := io.ReadAll(io.LimitReader(c, 1024))
	return nil, fmt.Errorf("nsexec: %s: %w", string(buf[1:n])+string(rest), ErrPortClosed)
}

// connFromRights turns the descriptor passed in oob into a net.Conn.
func connFromRights(oob []byte) (net.Conn, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("nsexec: the sandbox passed no connection")
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("nsexec: the sandbox passed no connection")
	}
	f := os.NewFile(uintptr(fds[0]), "sandbox-port")
	defer f.Close() // FileConn holds its own duplicate
	conn, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("nsexec: the sandbox's connection: %w", err)
	}
	return conn, nil
}
