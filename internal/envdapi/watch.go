package envdapi

// Connect procedure paths of the filesystem watch RPCs.
const (
	FilesystemWatchDirProcedure         = "/filesystem.Filesystem/WatchDir"
	FilesystemCreateWatcherProcedure    = "/filesystem.Filesystem/CreateWatcher"
	FilesystemGetWatcherEventsProcedure = "/filesystem.Filesystem/GetWatcherEvents"
	FilesystemRemoveWatcherProcedure    = "/filesystem.Filesystem/RemoveWatcher"
)

// EventType is filesystem.EventType.
type EventType int32

// Event types.
const (
	EventTypeUnspecified EventType = 0
	EventTypeCreate      EventType = 1
	EventTypeWrite       EventType = 2
	EventTypeRemove      EventType = 3
	EventTypeRename      EventType = 4
	EventTypeChmod       EventType = 5
)

var eventTypeNames = map[int32]string{
	0: "EVENT_TYPE_UNSPECIFIED", 1: "EVENT_TYPE_CREATE", 2: "EVENT_TYPE_WRITE",
	3: "EVENT_TYPE_REMOVE", 4: "EVENT_TYPE_RENAME", 5: "EVENT_TYPE_CHMOD",
}

// String returns the proto enum name.
func (t EventType) String() string { return eventTypeNames[int32(t)] }

// MarshalJSON writes the enum name.
func (t EventType) MarshalJSON() ([]byte, error) { return enumMarshal(eventTypeNames, int32(t)) }

// UnmarshalJSON reads an enum name or number.
func (t *EventType) UnmarshalJSON(data []byte) error {
	v, err := enumUnmarshal(eventTypeNames, data)
	*t = EventType(v)
	return err
}

// WatchDirRequest watches a directory (recursively if asked) until the
// stream ends.
type WatchDirRequest struct {
	Path               string `json:"path"`
	Recursive          bool   `json:"recursive,omitempty"`
	IncludeEntry       bool   `json:"includeEntry,omitempty"`
	AllowNetworkMounts bool   `json:"allowNetworkMounts,omitempty"`
}

// FilesystemEvent is one change below a watched directory; Name is relative
// to it. Entry is set only when asked for and the entry still exists
// (create, write and chmod events).
type FilesystemEvent struct {
	Name  string     `json:"name,omitempty"`
	Type  EventType  `json:"type,omitempty"`
	Entry *EntryInfo `json:"entry,omitempty"`
}

// WatchDirResponse is one message of the WatchDir stream, a oneof: the
// start event first, then filesystem events and keepalives.
type WatchDirResponse struct {
	Start      *struct{}        `json:"start,omitempty"`
	Filesystem *FilesystemEvent `json:"filesystem,omitempty"`
	Keepalive  *struct{}        `json:"keepalive,omitempty"`
}

// CreateWatcherRequest starts a watcher whose events are polled.
type CreateWatcherRequest struct {
	Path               string `json:"path"`
	Recursive          bool   `json:"recursive,omitempty"`
	IncludeEntry       bool   `json:"includeEntry,omitempty"`
	AllowNetworkMounts bool   `json:"allowNetworkMounts,omitempty"`
}

// CreateWatcherResponse names the new watcher.
type CreateWatcherResponse struct {
	WatcherID string `json:"watcherId,omitempty"`
}

// GetWatcherEventsRequest takes the events a watcher collected so far.
type GetWatcherEventsRequest struct {
	WatcherID string `json:"watcherId"`
}

// GetWatcherEventsResponse holds the collected events, oldest first.
type GetWatcherEventsResponse struct {
	Events []FilesystemEvent `json:"events,omitempty"`
}

// RemoveWatcherRequest stops a watcher.
type RemoveWatcherRequest struct {
	WatcherID string `json:"watcherId"`
}

// RemoveWatcherResponse is empty.
type RemoveWatcherResponse struct{}
