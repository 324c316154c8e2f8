package fakeprovider_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// connectDaemon serves process.Process/Start with connect-go, emitting
// start, data and end events 50 ms apart, and List as an unimplemented error.
type connectDaemon struct{ http.Handler }

func (connectDaemon) Close() {}

// newConnectDaemon is a stub daemon whose Start streams three events at
// once.
func newConnectDaemon(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
	return newGatedConnectDaemon(nil)(c)
}

// newGatedConnectDaemon is newConnectDaemon whose Start waits on gate
// before each event after the first (a nil gate never waits).
func newGatedConnectDaemon(gate <-chan struct{}) func(fakeprovider.DaemonConfig) fakeprovider.Daemon {
	return func(fakeprovider.DaemonConfig) fakeprovider.Daemon { return connectDaemon{connectMux(gate)} }
}

func connectMux(gate <-chan struct{}) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/process.Process/Start", connect.NewServerStreamHandler("/process.Process/Start",
		func(ctx context.Context, req *connect.Request[envdapi.StartRequest], st *connect.ServerStream[envdapi.StartResponse]) error {
			events := []envdapi.ProcessEvent{
				{Start: &envdapi.StartEvent{Pid: 42}},
				{Data: &envdapi.DataEvent{Stdout: []byte(req.Msg.Process.Cmd)}},
				{End: &envdapi.EndEvent{Exited: true, Status: "exit status 0"}},
			}
			for i, ev := range events {
				if i > 0 && gate != nil {
					select {
					case <-gate:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				if err := st.Send(&envdapi.StartResponse{Event: ev}); err != nil {
					return err
				}
			}
			return nil
		}, connect.WithCodec(envdapi.Codec{})))
	mux.Handle("/process.Process/List", connect.NewUnaryHandler("/process.Process/List",
		func(context.Context, *connect.Request[envdapi.ListRequest]) (*connect.Response[envdapi.ListResponse], error) {
			return nil, connect.NewError(connect.CodeNotFound, nil)
		}, connect.WithCodec(envdapi.Codec{})))
	return mux
}

func TestRoundTripper_ConnectStream(t *testing.T) {
	// The daemon sends each event after the first only once the client has
	// received the one before (it opens the gate): events sent together at
	// the end would hang until the guard.
	gate := make(chan struct{}, 3)
	f := newFixture(t, &fakeprovider.Options{NewDaemon: newGatedConnectDaemon(gate)})
	id := f.p.AddSandbox(fakeprovider.SandboxSeed{})
	domain, _ := f.p.Domain(id)
	base := "https://49983-" + id + "." + domain

	start := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](f.hc, base+"/process.Process/Start", connect.WithCodec(envdapi.Codec{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(hangGuard, cancel).Stop()
	st, err := start.CallServerStream(ctx, connect.NewRequest(&envdapi.StartRequest{Process: envdapi.ProcessConfig{Cmd: "echo"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []envdapi.ProcessEvent
	for st.Receive() {
		got = append(got, st.Msg().Event)
		gate <- struct{}{}
	}
	if err := st.Err(); err != nil {
		t.Fatalf("%v after %d events (an event held back until the end never opens its gate)", err, len(got))
	}
	if len(got) != 3 || got[0].Start == nil || got[0].Start.Pid != 42 || string(got[1].Data.Stdout) != "echo" || got[2].End == nil {
		t.Fatalf("events %+v", got)
	}

	list := connect.NewClient[envdapi.ListRequest, envdapi.ListResponse](f.hc, base+"/process.Process/List", connect.WithCodec(envdapi.Codec{}))
	if _, err := list.CallUnary(context.Background(), connect.NewRequest(&envdapi.ListRequest{})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("unary error: %v", err)
	}
	if e := f.p.Journal().Calls(sandbox.OpProcessList); len(e) != 1 || e[0].Status != 404 {
		t.Errorf("journal %+v", e)
	}
}
