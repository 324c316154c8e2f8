package sandbox

import (
	"context"
	"io/fs"
	"maps"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

// MaxListDepth is the deepest [Envd.ListDir] accepts.
const MaxListDepth = 64

// EntryType is the kind of a filesystem entry.
type EntryType string

// The entry types.
const (
	EntryFile      EntryType = "file"
	EntryDirectory EntryType = "directory"
	EntrySymlink   EntryType = "symlink"
	// EntryUnknown is reported for entries the daemon did not classify.
	EntryUnknown EntryType = "unknown"
)

// EntryInfo describes one entry of the sandbox's filesystem.
type EntryInfo struct {
	Name string
	// Path is the absolute path; relative paths given to a call are
	// resolved against the user's home by the daemon.
	Path string
	// Type is what the entry itself is: EntrySymlink for a symbolic link.
	Type EntryType
	// TargetType is, for a symbolic link, the type of what it points to as
	// the daemon resolved it (EntryUnknown when dangling); for any other
	// entry it equals Type.
	TargetType EntryType
	Size       int64
	// Mode holds the permission bits the daemon reports (envd sends only
	// those; for a symbolic link, its target's). Type tells the kind.
	Mode fs.FileMode
	// Permissions is the daemon's rendering of the full mode, e.g.
	// "-rw-r--r--", "drwxr-xr-x" or "Lrwxrwxrwx".
	Permissions string
	Owner       string
	Group       string
	// ModifiedTime is in UTC; zero when the daemon did not report it.
	ModifiedTime time.Time
	// SymlinkTarget is set for symbolic links.
	SymlinkTarget string
	// Metadata holds the entry's extended attributes that the daemon reports.
	Metadata map[string]string
}

func entryInfo(w *envdapi.EntryInfo) EntryInfo {
	if w == nil {
		return EntryInfo{Type: EntryUnknown}
	}
	e := EntryInfo{
		Name: w.Name, Path: w.Path, Size: int64(w.Size), Mode: fs.FileMode(w.Mode),
		Permissions: w.Permissions, Owner: w.Owner, Group: w.Group, Metadata: maps.Clone(w.Metadata),
	}
	switch w.Type {
	case envdapi.FileTypeFile:
		e.Type = EntryFile
	case envdapi.FileTypeDirectory:
		e.Type = EntryDirectory
	case envdapi.FileTypeSymlink:
		e.Type = EntrySymlink
	default:
		e.Type = EntryUnknown
	}
	e.TargetType = e.Type
	if w.ModifiedTime != nil {
		e.ModifiedTime = w.ModifiedTime.UTC()
	}
	if w.SymlinkTarget != nil {
		// envd reports a link with its target's type and the target's path.
		e.Type, e.SymlinkTarget = EntrySymlink, *w.SymlinkTarget
	}
	return e
}

// entryResult converts an optional entry of a response; a missing one is a
// malformed response.
func entryResult(op string, w *envdapi.EntryInfo) (*EntryInfo, error) {
	if w == nil {
		return nil, &Error{Op: op, Category: ProviderError, Code: CodeMalformedResponse}
	}
	e := entryInfo(w)
	return &e, nil
}

// Stat describes one entry. A missing path is a not_found error.
//
// Operation: POST /filesystem.Filesystem/Stat
func (e *Envd) Stat(ctx context.Context, path string) (*EntryInfo, error) {
	const op = OpFilesystemStat
	if path == "" {
		return nil, invalidArgument(op, "path")
	}
	res, err := unaryCall(ctx, e, op, e.stat, &envdapi.StatRequest{Path: path})
	if err != nil {
		return nil, err
	}
	return entryResult(op, res.Entry)
}

// ListDir lists a directory's entries down to depth levels (1 means its own
// entries; 0 is taken as 1), in the daemon's order.
//
// Operation: POST /filesystem.Filesystem/ListDir
func (e *Envd) ListDir(ctx context.Context, path string, depth int) ([]EntryInfo, error) {
	const op = OpFilesystemListDir
	if path == "" {
		return nil, invalidArgument(op, "path")
	}
	if depth < 0 || depth > MaxListDepth {
		return nil, invalidArgument(op, "depth")
	}
	if depth == 0 {
		depth = 1
	}
	res, err := unaryCall(ctx, e, op, e.listDir, &envdapi.ListDirRequest{Path: path, Depth: uint32(depth)})
	if err != nil {
		return nil, err
	}
	out := make([]EntryInfo, len(res.Entries))
	for i := range res.Entries {
		out[i] = entryInfo(&res.Entries[i])
	}
	return out, nil
}

// MakeDir creates a directory and any missing parents and describes it. An
// existing directory is a conflict error (already_exists).
//
// Operation: POST /filesystem.Filesystem/MakeDir
func (e *Envd) MakeDir(ctx context.Context, path string) (*EntryInfo, error) {
	const op = OpFilesystemMakeDir
	if path == "" {
		return nil, invalidArgument(op, "path")
	}
	res, err := unaryCall(ctx, e, op, e.makeDir, &envdapi.MakeDirRequest{Path: path})
	if err != nil {
		return nil, err
	}
	return entryResult(op, res.Entry)
}

// Remove deletes a file, a symbolic link or a whole directory tree.
// Removing a path that does not exist succeeds on envd (it behaves like
// os.RemoveAll).
//
// Operation: POST /filesystem.Filesystem/Remove
func (e *Envd) Remove(ctx context.Context, path string) error {
	const op = OpFilesystemRemove
	if path == "" {
		return invalidArgument(op, "path")
	}
	_, err := unaryCall(ctx, e, op, e.remove, &envdapi.RemoveRequest{Path: path})
	return err
}

// Move renames source to destination and describes the moved entry.
//
// Operation: POST /filesystem.Filesystem/Move
func (e *Envd) Move(ctx context.Context, source, destination string) (*EntryInfo, error) {
	const op = OpFilesystemMove
	if source == "" {
		return nil, invalidArgument(op, "source")
	}
	if destination == "" {
		return nil, invalidArgument(op, "destination")
	}
	res, err := unaryCall(ctx, e, op, e.move, &envdapi.MoveRequest{Source: source, Destination: destination})
	if err != nil {
		return nil, err
	}
	return entryResult(op, res.Entry)
}
