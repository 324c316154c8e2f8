// Package syncbuf has a byte buffer that goroutines may write and read at
// once: the sink of a server process's output, or of a logger that the
// code under test writes while a test reads it.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a [bytes.Buffer] safe for concurrent writers and readers. The
// zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
