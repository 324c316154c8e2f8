package conformance

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP protocol version the kit offers: the newest
// one with sessions.
const ProtocolVersion = "2025-11-25"

// target is the server under test, however it is reached.
type target interface {
	// start prepares the target once per run; the fake hub is serving.
	start(ctx context.Context) error
	// connect opens a new MCP session offering the given protocol version.
	connect(ctx context.Context, version string) (*clientConn, error)
	// logs returns everything the server has written to its log so far.
	logs() string
	// stop ends the target and releases its resources.
	stop()
}

// clientConn is one MCP session from the kit's side.
type clientConn struct {
	cs *mcp.ClientSession
	// ended, when not nil, waits until the server has finished with the
	// session (its close-time cleanup included).
	ended func(ctx context.Context) error
	// ending, when not nil, says after the session's Close how the server's
	// process ended: one of the processEnding values (stdio targets).
	ending func() string
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "sandboxkit-conformance", Version: Version}, nil)
}

// Version is the kit's version, recorded in reports and evidence. Each
// version has its own required-spec list (evidence/required/<Version>.txt);
// a version that changes the catalog or a rule is a new version, so that
// bundles recorded under an earlier one still verify against their list.
const Version = "0.4.0"

// idleTarget is a target with a Streamable HTTP session whose server closes
// it after the idle timeout.
type idleTarget interface {
	connectIdle(ctx context.Context, version string, idle time.Duration) (*clientConn, error)
}

// shutdownTarget is a target whose server the kit can shut down for one
// session without ending the other specs' server.
type shutdownTarget interface {
	connectShutdown(ctx context.Context, version string) (*clientConn, func(context.Context) error, error)
}

// httpShutdownTarget is a target that can serve a server of its own over
// Streamable HTTP and shut it down while calls are in flight.
type httpShutdownTarget interface {
	httpShutdownServer() (endpoint string, shutdown func(context.Context) error, err error)
}

// alternateTarget is a target that can also be reached over a second
// transport (the in-process reference server over Streamable HTTP).
type alternateTarget interface {
	connectAlternate(ctx context.Context, version string) (*clientConn, error)
}

// serverBaseEnv is the kit's own environment, as a server command inherits
// it, less the variables that must not leak from the kit into every server
// it starts: an instance ID ([InstanceEnv]) inherited by each server would
// make each new one sweep the sandboxes of the others as a dead previous
// life's. The crash spec and ServerEnv set it deliberately.
func serverBaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, InstanceEnv+"=") {
			env = append(env, kv)
		}
	}
	return env
}
