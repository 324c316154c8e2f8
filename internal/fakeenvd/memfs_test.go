package fakeenvd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
)

func newTestFS(t *testing.T, quota int64) *MemFS {
	t.Helper()
	m := NewMemFS("/home/user", 1000, 1000, quota)
	if err := m.MkdirAll("/home/user", 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMemFSErrors(t *testing.T) {
	m := newTestFS(t, 0)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.WriteFile("/home/user/f", []byte("x"), 0o644))
	must(m.MkdirAll("/home/user/d/sub", 0o755))
	must(m.WriteFile("/home/user/d/sub/g", []byte("y"), 0o644))
	must(m.Symlink("d", "/home/user/ld"))
	must(m.Symlink("/nowhere", "/home/user/dangling"))
	must(m.Symlink("loop2", "/home/user/loop1"))
	must(m.Symlink("loop1", "/home/user/loop2"))

	tests := []struct {
		name string
		op   func() error
		want syscall.Errno // 0 = success
	}{
		{"create under missing parent", func() error { return m.WriteFile("/home/user/nope/x", nil, 0o644) }, syscall.ENOENT},
		{"create under a file", func() error { return m.WriteFile("/home/user/f/x", nil, 0o644) }, syscall.ENOTDIR},
		{"mkdir existing", func() error { return m.Mkdir("/home/user/d", 0o755) }, syscall.EEXIST},
		{"mkdir missing parent", func() error { return m.Mkdir("/home/user/a/b", 0o755) }, syscall.ENOENT},
		{"mkdirall over file", func() error { return m.MkdirAll("/home/user/f/x", 0o755) }, syscall.ENOTDIR},
		{"mkdirall existing file", func() error { return m.MkdirAll("/home/user/f", 0o755) }, syscall.EEXIST},
		{"mkdirall existing dir", func() error { return m.MkdirAll("/home/user/d", 0o755) }, 0},
		{"remove non-empty dir", func() error { return m.Remove("/home/user/d") }, syscall.ENOTEMPTY},
		{"remove missing", func() error { return m.Remove("/home/user/missing") }, syscall.ENOENT},
		{"remove root", func() error { return m.Remove("/") }, syscall.EBUSY},
		{"removeall missing", func() error { return m.RemoveAll("/home/user/missing/deeper") }, 0},
		{"open dir for write", func() error { _, err := m.OpenFile("/home/user/d", os.O_WRONLY, 0); return err }, syscall.EISDIR},
		{"create excl existing", func() error {
			_, err := m.OpenFile("/home/user/f", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			return err
		}, syscall.EEXIST},
		{"stat through symlink dir", func() error { _, err := m.Stat("/home/user/ld/sub/g"); return err }, 0},
		{"stat dangling", func() error { _, err := m.Stat("/home/user/dangling"); return err }, syscall.ENOENT},
		{"lstat dangling", func() error { _, err := m.Lstat("/home/user/dangling"); return err }, 0},
		{"symlink loop", func() error { _, err := m.Stat("/home/user/loop1"); return err }, syscall.ELOOP},
		{"readlink of file", func() error { _, err := m.Readlink("/home/user/f"); return err }, syscall.EINVAL},
		{"readdir of file", func() error { _, err := m.ReadDir("/home/user/f"); return err }, syscall.ENOTDIR},
		{"relative path is under home", func() error { _, err := m.Stat("d/sub/g"); return err }, 0},
		{"rename dir into itself", func() error { return m.Rename("/home/user/d", "/home/user/d/sub/x") }, syscall.EINVAL},
		{"rename dir over file", func() error { return m.Rename("/home/user/d", "/home/user/f") }, syscall.ENOTDIR},
		{"rename file over dir", func() error { return m.Rename("/home/user/f", "/home/user/d") }, syscall.EISDIR},
		{"rename missing", func() error { return m.Rename("/home/user/missing", "/home/user/x") }, syscall.ENOENT},
		{"rename to missing parent", func() error { return m.Rename("/home/user/f", "/home/user/no/x") }, syscall.ENOENT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			switch {
			case tc.want == 0 && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != 0 && !errors.Is(err, tc.want):
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
			if tc.want == syscall.ENOENT && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("ENOENT error %v is not fs.ErrNotExist", err)
			}
		})
	}
}

func TestMemFSSemantics(t *testing.T) {
	m := newTestFS(t, 0)
	if err := m.WriteFile("notes.txt", []byte("hello"), 0o666); err != nil {
		t.Fatal(err)
	}
	info, err := m.Stat("/home/user/notes.txt")
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != 5 || info.Mode() != 0o644 || info.Name() != "notes.txt" || info.ModTime().IsZero() {
		t.Fatalf("info = %v %v %v %v", info.Size(), info.Mode(), info.Name(), info.ModTime())
	}
	if uid, gid := ownerIDs(info); uid != 1000 || gid != 1000 {
		t.Fatalf("owner = %d:%d", uid, gid)
	}
	// Append, overwrite, seek, truncate.
	f, err := m.OpenFile("notes.txt", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(f, " world")
	f.Close()
	f, _ = m.OpenFile("notes.txt", os.O_RDWR, 0)
	f.Seek(6, io.SeekStart)
	f.Write([]byte("W"))
	f.Seek(0, io.SeekStart)
	got, _ := io.ReadAll(f)
	f.Close()
	if string(got) != "hello World" {
		t.Fatalf("content = %q", got)
	}
	// Rename replaces a file and an empty directory.
	m.WriteFile("/home/user/other", []byte("o"), 0o644)
	if err := m.Rename("/home/user/other", "/home/user/notes.txt"); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.ReadFile("/home/user/notes.txt"); string(b) != "o" {
		t.Fatalf("after rename: %q", b)
	}
	m.MkdirAll("/home/user/src/a", 0o755)
	m.Mkdir("/home/user/dst", 0o755)
	if err := m.Rename("/home/user/src", "/home/user/dst"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("/home/user/dst/a"); err != nil {
		t.Fatal(err)
	}
	// ReadDir is sorted; RemoveAll drops a subtree.
	for _, n := range []string{"c", "a", "b"} {
		m.WriteFile("/home/user/dst/"+n, nil, 0o644)
	}
	ents, _ := m.ReadDir("/home/user/dst")
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[a b c]" {
		t.Fatalf("names = %v", names)
	}
	if err := m.RemoveAll("/home/user/dst"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("/home/user/dst/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("child still reachable: %v", err)
	}
	// An open handle survives removal.
	m.WriteFile("/home/user/gone", []byte("still here"), 0o644)
	h, _ := m.OpenFile("/home/user/gone", os.O_RDONLY, 0)
	m.Remove("/home/user/gone")
	if b, _ := io.ReadAll(h); string(b) != "still here" {
		t.Fatalf("unlinked read = %q", b)
	}
	// Writing through a dangling symlink creates its target.
	m.Symlink("target.txt", "/home/user/link")
	if err := m.WriteFile("/home/user/link", []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.ReadFile("/home/user/target.txt"); string(b) != "t" {
		t.Fatalf("target = %q", b)
	}
	if real, _ := m.RealPath("/home/user/link"); real != "/home/user/target.txt" {
		t.Fatalf("realpath = %q", real)
	}
	li, _ := m.Lstat("/home/user/link")
	if li.Mode()&fs.ModeSymlink == 0 || li.Size() != int64(len("target.txt")) {
		t.Fatalf("lstat = %v %d", li.Mode(), li.Size())
	}
}

func TestMemFSQuota(t *testing.T) {
	m := newTestFS(t, 100)
	if err := m.WriteFile("/home/user/a", bytes.Repeat([]byte("a"), 60), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _ := m.OpenFile("/home/user/b", os.O_WRONLY|os.O_CREATE, 0o644)
	n, err := f.Write(bytes.Repeat([]byte("b"), 60))
	f.Close()
	if n != 40 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write = %d, %v; want 40, ENOSPC", n, err)
	}
	if used, quota := m.Usage(); used != 100 || quota != 100 {
		t.Fatalf("usage = %d/%d", used, quota)
	}
	// Truncating and removing give the space back.
	m.WriteFile("/home/user/b", nil, 0o644)
	if used, _ := m.Usage(); used != 60 {
		t.Fatalf("after truncate used = %d", used)
	}
	m.Remove("/home/user/a")
	if used, _ := m.Usage(); used != 0 {
		t.Fatalf("after remove used = %d", used)
	}
	if err := m.WriteFile("/home/user/c", bytes.Repeat([]byte("c"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	// Renaming over a file releases the replaced bytes.
	m.RemoveAll("/home/user/c")
	m.WriteFile("/home/user/x", bytes.Repeat([]byte("x"), 30), 0o644)
	m.WriteFile("/home/user/y", bytes.Repeat([]byte("y"), 30), 0o644)
	m.Rename("/home/user/x", "/home/user/y")
	if used, _ := m.Usage(); used != 30 {
		t.Fatalf("after rename used = %d", used)
	}
}

func TestMemFSDevicesAndConcurrency(t *testing.T) {
	m := newTestFS(t, 0)
	m.MkdirAll("/dev", 0o755)
	m.mknod("/dev/null", devNull)
	m.mknod("/dev/zero", devZero)
	if err := m.WriteFile("/dev/null", []byte("discarded"), 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.ReadFile("/dev/null"); len(b) != 0 {
		t.Fatalf("/dev/null read %q", b)
	}
	z, _ := m.OpenFile("/dev/zero", os.O_RDONLY, 0)
	buf := []byte{1, 2, 3}
	z.Read(buf)
	if !bytes.Equal(buf, []byte{0, 0, 0}) {
		t.Fatalf("/dev/zero = %v", buf)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := fmt.Sprintf("/home/user/c%d", i)
			for j := range 50 {
				m.WriteFile(p, []byte(fmt.Sprint(j)), 0o644)
				m.ReadFile(p)
				m.ReadDir("/home/user")
			}
		})
	}
	wg.Wait()
	if ents, _ := m.ReadDir("/home/user"); len(ents) != 8 {
		t.Fatalf("entries = %d", len(ents))
	}
}
