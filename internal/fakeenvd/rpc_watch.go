package fakeenvd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// errOverflow ends a watch whose queue filled, as fsnotify reports an
// inotify queue overflow on its error channel.
var errOverflow = errors.New("fsnotify: queue or buffer overflow")

// dirWatch is one watched directory: the tree's changes filtered to those
// below root (direct children only unless recursive), named relative to it.
type dirWatch struct {
	d            *Daemon
	root         string
	recursive    bool
	includeEntry bool
	w            *fsWatch
	cancel       func()
}

// watchDir validates a watch request as envd does (infra packages/envd/
// internal/services/filesystem/watch.go) and starts watching.
func (d *Daemon) watchDir(h interface{ Header() http.Header }, p string, recursive, includeEntry bool) (*dirWatch, error) {
	_, abs, err := d.rpcPath(h, p)
	if err != nil {
		return nil, err
	}
	root, err := d.fs.RealPath(abs)
	if err == nil {
		var info fs.FileInfo
		if info, err = d.fs.Stat(root); err == nil && !info.IsDir() {
			// envd wraps its (nil) stat error here, and its message shows
			// "%!w(<nil>)"; so does this one.
			var statErr error
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path %s not a directory: %w", abs, statErr))
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("path %s not found: %w", abs, err))
	case err != nil:
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("error statting path %s: %w", abs, err))
	}
	// Subscribed before the answer, so nothing done after it is missed.
	w, cancel, err := d.fs.Watch(root, recursive)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("error adding path %s to watcher: %w", abs, err))
	}
	return &dirWatch{d: d, root: root, recursive: recursive, includeEntry: includeEntry, w: w, cancel: cancel}, nil
}

// event turns a change into the event envd sends, or reports false when
// the change is not below the watched directory.
func (dw *dirWatch) event(c fsChange) (envdapi.FilesystemEvent, bool) {
	if !strings.HasPrefix(c.path, dw.root+"/") && dw.root != "/" || c.path == dw.root {
		return envdapi.FilesystemEvent{}, false
	}
	if !dw.recursive && path.Dir(c.path) != dw.root {
		return envdapi.FilesystemEvent{}, false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(c.path, dw.root), "/")
	ev := envdapi.FilesystemEvent{Name: name, Type: c.op}
	// Only create, write and chmod events carry the entry: after a remove
	// or rename-away the path names something else, if anything
	// (infra packages/envd/internal/services/filesystem/utils.go opCarriesEntry).
	if dw.includeEntry && (c.op == envdapi.EventTypeCreate || c.op == envdapi.EventTypeWrite || c.op == envdapi.EventTypeChmod) {
		if e, err := dw.d.lstatEntry(c.path); err == nil {
			ev.Entry = e
		}
	}
	return ev, true
}

func (d *Daemon) rpcWatchDir(ctx context.Context, req *connect.Request[envdapi.WatchDirRequest], stream *connect.ServerStream[envdapi.WatchDirResponse]) error {
	dw, err := d.watchDir(req, req.Msg.Path, req.Msg.Recursive, req.Msg.IncludeEntry)
	if err != nil {
		return err
	}
	defer dw.cancel()
	if err := stream.Send(&envdapi.WatchDirResponse{Start: &struct{}{}}); err != nil {
		return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending start event: %w", err))
	}
	var tick <-chan time.Time
	keepalive := keepaliveInterval(req.Header())
	if keepalive > 0 {
		t := time.NewTicker(keepalive)
		defer t.Stop()
		tick = t.C
	}
	gone := d.ctx.Done()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return d.cutIfGone(errGone)
		case <-dw.w.overflow:
			return connect.NewError(connect.CodeInternal, fmt.Errorf("watcher error: %w", errOverflow))
		case <-tick:
			if err := stream.Send(&envdapi.WatchDirResponse{Keepalive: &struct{}{}}); err != nil {
				return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending keepalive: %w", err))
			}
		case c := <-dw.w.ch:
			ev, ok := dw.event(c)
			if !ok {
				continue
			}
			if err := stream.Send(&envdapi.WatchDirResponse{Filesystem: &ev}); err != nil {
				return connect.NewError(connect.CodeUnknown, fmt.Errorf("error sending filesystem event: %w", err))
			}
		}
	}
}

// watcherTable holds the polled watchers of CreateWatcher.
type watcherTable struct {
	mu sync.Mutex
	m  map[string]*dirWatch
}

func (t *watcherTable) add(dw *dirWatch) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	id := "w" + hex.EncodeToString(b[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*dirWatch{}
	}
	t.m[id] = dw
	return id
}

func (t *watcherTable) get(id string) (*dirWatch, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if dw, ok := t.m[id]; ok {
		return dw, nil
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher with id %s not found", id))
}

func (t *watcherTable) remove(id string) (*dirWatch, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dw, ok := t.m[id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher with id %s not found", id))
	}
	delete(t.m, id)
	return dw, nil
}

func (d *Daemon) rpcCreateWatcher(_ context.Context, req *connect.Request[envdapi.CreateWatcherRequest]) (*connect.Response[envdapi.CreateWatcherResponse], error) {
	dw, err := d.watchDir(req, req.Msg.Path, req.Msg.Recursive, req.Msg.IncludeEntry)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&envdapi.CreateWatcherResponse{WatcherID: d.watchers.add(dw)}), nil
}

// rpcGetWatcherEvents drains what the watcher collected; an overflowed
// watcher fails, as envd's does once fsnotify reported an error.
func (d *Daemon) rpcGetWatcherEvents(_ context.Context, req *connect.Request[envdapi.GetWatcherEventsRequest]) (*connect.Response[envdapi.GetWatcherEventsResponse], error) {
	dw, err := d.watchers.get(req.Msg.WatcherID)
	if err != nil {
		return nil, err
	}
	events := []envdapi.FilesystemEvent{}
	for {
		select {
		case c := <-dw.w.ch:
			if ev, ok := dw.event(c); ok {
				events = append(events, ev)
			}
			continue
		case <-dw.w.overflow:
			return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("watcher error: %w", errOverflow))
		default:
		}
		return connect.NewResponse(&envdapi.GetWatcherEventsResponse{Events: events}), nil
	}
}

func (d *Daemon) rpcRemoveWatcher(_ context.Context, req *connect.Request[envdapi.RemoveWatcherRequest]) (*connect.Response[envdapi.RemoveWatcherResponse], error) {
	dw, err := d.watchers.remove(req.Msg.WatcherID)
	if err != nil {
		return nil, err
	}
	dw.cancel()
	return connect.NewResponse(&envdapi.RemoveWatcherResponse{}), nil
}

// closeAll stops every watcher (the daemon is closing).
func (t *watcherTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, dw := range t.m {
		dw.cancel()
		delete(t.m, id)
	}
}
