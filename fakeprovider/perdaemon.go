package fakeprovider

import "sync"

// perDaemon keeps one value per sandbox daemon (a code interpreter, a
// transport to its ports), made on first use and closed once the daemon's
// sandbox is gone; its zero value is ready to use.
type perDaemon[T any] struct {
	mu     sync.Mutex
	values map[Daemon]T
}

// get returns key's value, making it with newValue on first use, and closes
// (with closeValue) and drops the values of daemons no longer live (killed or
// expired sandboxes).
func (t *perDaemon[T]) get(key Daemon, live map[Daemon]bool, newValue func() T, closeValue func(T)) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.values {
		if !live[k] {
			closeValue(v)
			delete(t.values, k)
		}
	}
	if t.values == nil {
		t.values = map[Daemon]T{}
	}
	v, ok := t.values[key]
	if !ok {
		v = newValue()
		t.values[key] = v
	}
	return v
}
