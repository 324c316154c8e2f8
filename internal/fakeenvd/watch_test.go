package fakeenvd

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

func watchStream(t *testing.T, ctx context.Context, e *env, req *envdapi.WatchDirRequest) *connect.ServerStreamForClient[envdapi.WatchDirResponse] {
	t.Helper()
	c := connect.NewClient[envdapi.WatchDirRequest, envdapi.WatchDirResponse](e.srv.Client(), e.srv.URL+envdapi.FilesystemWatchDirProcedure, connect.WithCodec(envdapi.Codec{}))
	st, err := c.CallServerStream(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if !st.Receive() || st.Msg().Start == nil {
		t.Fatalf("first message %+v, err %v; want the start event", st.Msg(), st.Err())
	}
	return st
}

// nextEvents reads n filesystem events, as "TYPE name" strings.
func nextEvents(t *testing.T, st *connect.ServerStreamForClient[envdapi.WatchDirResponse], n int) ([]string, []*envdapi.FilesystemEvent) {
	t.Helper()
	var got []string
	var evs []*envdapi.FilesystemEvent
	for len(got) < n && st.Receive() {
		if ev := st.Msg().Filesystem; ev != nil {
			got = append(got, ev.Type.String()+" "+ev.Name)
			evs = append(evs, ev)
		}
	}
	if len(got) < n {
		t.Fatalf("events %q, stream ended: %v", got, st.Err())
	}
	return got, evs
}

// TestWatchDir follows envd's WatchDir (infra packages/envd/internal/
// services/filesystem/watch.go): a start event, then fsnotify-style events
// named relative to the directory; children only unless recursive; the
// entry only for create/write/chmod with includeEntry.
func TestWatchDir(t *testing.T) {
	e := newEnv(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.d.FS().MkdirAll("/home/user/w/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	flat := watchStream(t, ctx, e, &envdapi.WatchDirRequest{Path: "w", IncludeEntry: true})
	deep := watchStream(t, ctx, e, &envdapi.WatchDirRequest{Path: "/home/user/w", Recursive: true})

	if code, body := upload(t, e, url.Values{"path": {"/home/user/w/a.txt"}}, "application/octet-stream", strings.NewReader("hi"), nil); code != 200 {
		t.Fatalf("upload %d %s", code, body)
	}
	// The entry is read when the event is sent, as envd stats it then.
	got, evs := nextEvents(t, flat, 3)
	if evs[0].Entry == nil || evs[0].Entry.Path != "/home/user/w/a.txt" || evs[2].Entry == nil || evs[2].Entry.Size != 2 {
		t.Errorf("entries of %q: %+v, %+v", got, evs[0].Entry, evs[2].Entry)
	}
	if err := e.d.FS().WriteFile("/home/user/w/sub/deep.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.d.FS().Rename("/home/user/w/a.txt", "/home/user/w/b.txt"); err != nil {
		t.Fatal(err)
	}
	if err := e.d.FS().Remove("/home/user/w/b.txt"); err != nil {
		t.Fatal(err)
	}

	more, evs := nextEvents(t, flat, 3)
	got = append(got, more...)
	// envd's upload creates, chowns, then writes (infra packages/envd/internal/api/upload.go processFile).
	want := []string{"EVENT_TYPE_CREATE a.txt", "EVENT_TYPE_CHMOD a.txt", "EVENT_TYPE_WRITE a.txt", "EVENT_TYPE_RENAME a.txt", "EVENT_TYPE_CREATE b.txt", "EVENT_TYPE_REMOVE b.txt"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("flat watch %q, want %q", got, want)
	}
	if evs[0].Entry != nil || evs[2].Entry != nil {
		t.Errorf("entries: rename %+v, remove %+v", evs[0].Entry, evs[2].Entry)
	}
	got, evs = nextEvents(t, deep, 4)
	if got[3] != "EVENT_TYPE_CREATE sub/deep.txt" || evs[0].Entry != nil {
		t.Errorf("recursive watch %q (entry %+v)", got, evs[0].Entry)
	}

	// Errors: a missing path is not_found, a file invalid_argument.
	c := connect.NewClient[envdapi.WatchDirRequest, envdapi.WatchDirResponse](e.srv.Client(), e.srv.URL+envdapi.FilesystemWatchDirProcedure, connect.WithCodec(envdapi.Codec{}))
	for path, code := range map[string]connect.Code{"/nope": connect.CodeNotFound, "/etc/hostname": connect.CodeInvalidArgument} {
		st, err := c.CallServerStream(ctx, connect.NewRequest(&envdapi.WatchDirRequest{Path: path}))
		if err == nil {
			for st.Receive() {
			}
			err = st.Err()
		}
		if connect.CodeOf(err) != code {
			t.Errorf("watch %s: %v, want %v", path, err, code)
		}
	}

	// Closing the daemon cuts the stream (the sandbox is gone).
	e.d.Close()
	for flat.Receive() {
	}
	if err := flat.Err(); err == nil {
		t.Error("watch stream ended cleanly after Close")
	}
}

// TestWatchers follows envd's polled watchers (infra packages/envd/
// internal/services/filesystem/watch_sync.go): CreateWatcher returns an
// id, GetWatcherEvents drains, RemoveWatcher stops; unknown ids not_found.
func TestWatchers(t *testing.T) {
	e := newEnv(t, Config{})
	cw, err := call[envdapi.CreateWatcherRequest, envdapi.CreateWatcherResponse](t, e, envdapi.FilesystemCreateWatcherProcedure, &envdapi.CreateWatcherRequest{Path: "/tmp"}, nil)
	if err != nil || !strings.HasPrefix(cw.WatcherID, "w") {
		t.Fatalf("create %+v %v", cw, err)
	}
	if err := e.d.FS().Mkdir("/tmp/d", 0o755); err != nil {
		t.Fatal(err)
	}
	get := func() ([]envdapi.FilesystemEvent, error) {
		r, err := call[envdapi.GetWatcherEventsRequest, envdapi.GetWatcherEventsResponse](t, e, envdapi.FilesystemGetWatcherEventsProcedure, &envdapi.GetWatcherEventsRequest{WatcherID: cw.WatcherID}, nil)
		if err != nil {
			return nil, err
		}
		return r.Events, nil
	}
	evs, err := get()
	if err != nil || len(evs) != 1 || evs[0].Name != "d" || evs[0].Type != envdapi.EventTypeCreate {
		t.Fatalf("events %+v %v", evs, err)
	}
	if evs, err := get(); err != nil || len(evs) != 0 {
		t.Fatalf("second drain %+v %v", evs, err)
	}
	if _, err := call[envdapi.RemoveWatcherRequest, envdapi.RemoveWatcherResponse](t, e, envdapi.FilesystemRemoveWatcherProcedure, &envdapi.RemoveWatcherRequest{WatcherID: cw.WatcherID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := get(); connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "watcher with id "+cw.WatcherID+" not found") {
		t.Fatalf("after remove: %v", err)
	}
}

// TestWatcherOverflow: a watch that falls more than watchQueue events
// behind fails with fsnotify's overflow error, as envd's does when the
// inotify queue overflows.
func TestWatcherOverflow(t *testing.T) {
	e := newEnv(t, Config{})
	cw, err := call[envdapi.CreateWatcherRequest, envdapi.CreateWatcherResponse](t, e, envdapi.FilesystemCreateWatcherProcedure, &envdapi.CreateWatcherRequest{Path: "/tmp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= watchQueue; i++ {
		if err := e.d.FS().Mkdir("/tmp/d"+strconv.Itoa(i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err = call[envdapi.GetWatcherEventsRequest, envdapi.GetWatcherEventsResponse](t, e, envdapi.FilesystemGetWatcherEventsProcedure, &envdapi.GetWatcherEventsRequest{WatcherID: cw.WatcherID}, nil)
	if connect.CodeOf(err) != connect.CodeInternal || !strings.Contains(err.Error(), "watcher error: fsnotify: queue or buffer overflow") {
		t.Fatalf("after overflow: %v", err)
	}
}
