package envdapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Int64 is a proto3 int64: written as a JSON string, read from a string or a
// bare number.
type Int64 int64

// MarshalJSON writes the value as a quoted decimal string.
func (n Int64) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(strconv.FormatInt(int64(n), 10))), nil
}

// UnmarshalJSON reads a quoted or bare decimal integer.
func (n *Int64) UnmarshalJSON(data []byte) error {
	s := string(bytes.Trim(data, `"`))
	if s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("envdapi: int64 value: %w", err)
	}
	*n = Int64(v)
	return nil
}

// enumJSON encodes an enum by name and decodes a name or a number.
func enumMarshal(names map[int32]string, v int32) ([]byte, error) {
	if name, ok := names[v]; ok {
		return json.Marshal(name)
	}
	return json.Marshal(v)
}

func enumUnmarshal(names map[int32]string, data []byte) (int32, error) {
	var name string
	if err := json.Unmarshal(data, &name); err == nil {
		for v, n := range names {
			if n == name {
				return v, nil
			}
		}
		return 0, fmt.Errorf("envdapi: unknown enum value")
	}
	var v int32
	if err := json.Unmarshal(data, &v); err != nil {
		return 0, fmt.Errorf("envdapi: enum value: %w", err)
	}
	return v, nil
}

// FileType is filesystem.FileType.
type FileType int32

// File types.
const (
	FileTypeUnspecified FileType = 0
	FileTypeFile        FileType = 1
	FileTypeDirectory   FileType = 2
	FileTypeSymlink     FileType = 3
)

var fileTypeNames = map[int32]string{
	0: "FILE_TYPE_UNSPECIFIED", 1: "FILE_TYPE_FILE", 2: "FILE_TYPE_DIRECTORY", 3: "FILE_TYPE_SYMLINK",
}

// String returns the proto enum name.
func (t FileType) String() string { return fileTypeNames[int32(t)] }

// MarshalJSON writes the enum name.
func (t FileType) MarshalJSON() ([]byte, error) { return enumMarshal(fileTypeNames, int32(t)) }

// UnmarshalJSON reads an enum name or number.
func (t *FileType) UnmarshalJSON(data []byte) error {
	v, err := enumUnmarshal(fileTypeNames, data)
	*t = FileType(v)
	return err
}

// Signal is process.Signal.
type Signal int32

// Signals.
const (
	SignalUnspecified Signal = 0
	SignalSIGKILL     Signal = 9
	SignalSIGTERM     Signal = 15
)

var signalNames = map[int32]string{0: "SIGNAL_UNSPECIFIED", 9: "SIGNAL_SIGKILL", 15: "SIGNAL_SIGTERM"}

// String returns the proto enum name.
func (s Signal) String() string { return signalNames[int32(s)] }

// MarshalJSON writes the enum name.
func (s Signal) MarshalJSON() ([]byte, error) { return enumMarshal(signalNames, int32(s)) }

// UnmarshalJSON reads an enum name or number.
func (s *Signal) UnmarshalJSON(data []byte) error {
	v, err := enumUnmarshal(signalNames, data)
	*s = Signal(v)
	return err
}
