package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: every write of many goroutines lands whole (run it
// with -race to see the lock hold).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); len(got) != 8*100*2 || strings.Count(got, "ab") != 800 {
		t.Fatalf("got %d bytes, %d whole writes; want 1600 bytes, 800 writes", len(got), strings.Count(got, "ab"))
	}
}
