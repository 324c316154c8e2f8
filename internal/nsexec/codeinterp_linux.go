//go:build linux

package nsexec

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"

	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// listenCodeInterpreter serves d's code interpreter, whose kernels are
// real python3, node and bash processes, on port 49999 of the sandbox's
// loopback, where E2B's code-interpreter template runs its server; the
// host reaches it as any other port ([Sandbox.DialPort]). A process in the
// sandbox can reach it too, as on E2B.
func listenCodeInterpreter(d *fakeenvd.Daemon) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(fakecodeinterp.Port)))
	if err != nil {
		return fmt.Errorf("code interpreter: %w", err)
	}
	srv := &http.Server{Handler: d.ProcessCodeInterpreter(), ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	return nil
}
