package envdapi

import "time"

// Connect procedure paths of the filesystem service.
const (
	FilesystemStatProcedure    = "/filesystem.Filesystem/Stat"
	FilesystemListDirProcedure = "/filesystem.Filesystem/ListDir"
	FilesystemMakeDirProcedure = "/filesystem.Filesystem/MakeDir"
	FilesystemRemoveProcedure  = "/filesystem.Filesystem/Remove"
	FilesystemMoveProcedure    = "/filesystem.Filesystem/Move"
)

// EntryInfo describes one filesystem entry.
type EntryInfo struct {
	Name          string            `json:"name,omitempty"`
	Type          FileType          `json:"type,omitempty"`
	Path          string            `json:"path,omitempty"`
	Size          Int64             `json:"size,omitempty"`
	Mode          uint32            `json:"mode,omitempty"`
	Permissions   string            `json:"permissions,omitempty"`
	Owner         string            `json:"owner,omitempty"`
	Group         string            `json:"group,omitempty"`
	ModifiedTime  *time.Time        `json:"modifiedTime,omitempty"`
	SymlinkTarget *string           `json:"symlinkTarget,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

// StatRequest asks for one entry.
type StatRequest struct {
	Path string `json:"path"`
}

// StatResponse holds the entry.
type StatResponse struct {
	Entry *EntryInfo `json:"entry,omitempty"`
}

// ListDirRequest lists a directory to a depth (0 and 1 both mean its own entries).
type ListDirRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth,omitempty"`
}

// ListDirResponse holds the entries.
type ListDirResponse struct {
	Entries []EntryInfo `json:"entries,omitempty"`
}

// MakeDirRequest creates a directory and its parents.
type MakeDirRequest struct {
	Path string `json:"path"`
}

// MakeDirResponse holds the new directory.
type MakeDirResponse struct {
	Entry *EntryInfo `json:"entry,omitempty"`
}

// RemoveRequest removes a file or a directory tree.
type RemoveRequest struct {
	Path string `json:"path"`
}

// RemoveResponse is empty.
type RemoveResponse struct{}

// MoveRequest renames an entry.
type MoveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// MoveResponse holds the moved entry.
type MoveResponse struct {
	Entry *EntryInfo `json:"entry,omitempty"`
}
