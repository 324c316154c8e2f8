package fakeprovider_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
)

// TestPauseWithoutMemoryReboots checks boot_id across pause and resume: a
// pause with memory (the default) resumes the same boot; a filesystem-only
// pause ("memory": false) resumes into a new one, with the files kept
// (Python SDK e2b/sandbox_sync/main.py pause(keep_memory)).
func TestPauseWithoutMemoryReboots(t *testing.T) {
	var mu sync.Mutex
	byID := map[string]*fakeenvd.Daemon{}
	f := newFixture(t, &fakeprovider.Options{NewDaemon: func(c fakeprovider.DaemonConfig) fakeprovider.Daemon {
		d := fakeprovider.InMemoryDaemon(c).(*fakeenvd.Daemon)
		mu.Lock()
		byID[c.SandboxID] = d
		mu.Unlock()
		return d
	}})
	id := f.create(map[string]any{"templateID": "base", "timeout": 300})["sandboxID"].(string)
	mu.Lock()
	d := byID[id]
	mu.Unlock()
	bootID := func() string {
		b, err := d.FS().ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil || len(b) != 37 {
			t.Fatalf("boot_id %q: %v", b, err)
		}
		return string(b)
	}
	if err := d.FS().WriteFile("/home/user/kept", []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	pauseResume := func(body any) {
		t.Helper()
		if res := f.do("POST", "/sandboxes/"+id+"/pause", body); res.status != http.StatusNoContent {
			t.Fatalf("pause: %d %s", res.status, res.body)
		}
		if res := f.do("POST", "/sandboxes/"+id+"/connect", map[string]any{"timeout": 300}); res.status != http.StatusCreated {
			t.Fatalf("resume: %d %s", res.status, res.body)
		}
	}
	first := bootID()
	pauseResume(nil)
	pauseResume(map[string]any{"memory": true})
	if got := bootID(); got != first {
		t.Fatalf("a pause with memory changed boot_id %q to %q", first, got)
	}
	pauseResume(map[string]any{"memory": false})
	second := bootID()
	if second == first {
		t.Fatalf("a filesystem-only pause kept boot_id %q", first)
	}
	if b, err := d.FS().ReadFile("/home/user/kept"); err != nil || string(b) != "k" {
		t.Fatalf("files after a reboot: %q %v", b, err)
	}
	// The reboot happens once: a later pause with memory keeps the new boot.
	pauseResume(map[string]any{"memory": true})
	if got := bootID(); got != second {
		t.Fatalf("boot_id changed again: %q to %q", second, got)
	}
}
