package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/fakeenvd"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// allBytes holds every byte value, repeated.
func allBytes(repeat int) []byte {
	b := make([]byte, 0, 256*repeat)
	for range repeat {
		for v := range 256 {
			b = append(b, byte(v))
		}
	}
	return b
}

// patternReader yields n bytes of pattern 0 without holding them.
type patternReader struct {
	off, n int64
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.off)
	fillPattern(p[:k], 0, r.off)
	r.off += k
	return int(k), nil
}

func TestFiles_BinaryRoundTrip(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{mode: mode})
			ctx := context.Background()
			data := allBytes(3)
			info, err := h.envd.Upload(ctx, "/tmp/bin/all.bin", bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if info.Path != "/tmp/bin/all.bin" || info.Name != "all.bin" || info.Size != int64(len(data)) {
				t.Errorf("WriteInfo = %+v", info)
			}
			rc, err := h.envd.Download(ctx, "/tmp/bin/all.bin")
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("download differs (%d bytes, %v)", len(got), err)
			}

			// Multipart, relative to the home, from a reader of unknown length.
			info, err = h.envd.UploadMultipart(ctx, "mp/all.bin", io.MultiReader(bytes.NewReader(data[:100]), bytes.NewReader(data[100:])))
			if err != nil {
				t.Fatal(err)
			}
			if info.Path != "/home/user/mp/all.bin" || info.Size != int64(len(data)) {
				t.Errorf("multipart WriteInfo = %+v", info)
			}
			var buf bytes.Buffer
			n, err := h.envd.DownloadTo(ctx, "/home/user/mp/all.bin", &buf)
			if err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("DownloadTo = %d, %v", n, err)
			}
			st, err := h.envd.Stat(ctx, "mp/all.bin")
			if err != nil || st.Size != int64(len(data)) || st.Type != sandbox.EntryFile || st.Owner != "user" {
				t.Fatalf("Stat = %+v, %v", st, err)
			}

			// Bounded reads.
			b, truncated, err := h.envd.ReadFile(ctx, "/tmp/bin/all.bin", 256)
			if err != nil || !truncated || !bytes.Equal(b, data[:256]) {
				t.Fatalf("ReadFile(256) = %d bytes, truncated %v, %v", len(b), truncated, err)
			}
			b, truncated, err = h.envd.ReadFile(ctx, "/tmp/bin/all.bin", int64(len(data)))
			if err != nil || truncated || !bytes.Equal(b, data) {
				t.Fatalf("ReadFile(exact) = %d bytes, truncated %v, %v", len(b), truncated, err)
			}
			// Empty files.
			if _, err := h.envd.Upload(ctx, "/tmp/empty", bytes.NewReader(nil)); err != nil {
				t.Fatal(err)
			}
			b, truncated, err = h.envd.ReadFile(ctx, "/tmp/empty", 10)
			if err != nil || truncated || len(b) != 0 {
				t.Fatalf("empty file: %q %v %v", b, truncated, err)
			}
		})
	}
}

func TestFiles_TextHelpers(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	const text = "héllo\nwörld\n"
	info, err := h.envd.WriteText(ctx, "notes/a.txt", text)
	if err != nil || info.Size != int64(len(text)) || info.Path != "/home/user/notes/a.txt" {
		t.Fatalf("WriteText = %+v, %v", info, err)
	}
	got, truncated, err := h.envd.ReadText(ctx, "~/notes/a.txt", 1<<20)
	if err != nil || truncated || got != text {
		t.Fatalf("ReadText = %q %v %v", got, truncated, err)
	}
	out, err := h.envd.RunOutput(ctx, "cat notes/a.txt", nil)
	if err != nil || string(out.Stdout) != text {
		t.Fatalf("cat = %q, %v", out.Stdout, err)
	}
	// Overwrite.
	if _, err := h.envd.WriteText(ctx, "notes/a.txt", "x"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := h.envd.ReadText(ctx, "notes/a.txt", 10); got != "x" {
		t.Fatalf("after overwrite %q", got)
	}
}

func TestFiles_50MBRoundTrip(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("50 MB transfer")
	}
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	const size = 50 << 20
	info, err := h.envd.Upload(ctx, "/tmp/big.bin", &patternReader{n: size})
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != size {
		t.Fatalf("sent %d bytes", info.Size)
	}
	hw := sha256.New()
	n, err := h.envd.DownloadTo(ctx, "/tmp/big.bin", hw)
	if err != nil || n != size {
		t.Fatalf("DownloadTo = %d, %v", n, err)
	}
	if sum(hw) != patternHash(0, size) {
		t.Fatal("sha256 differs after the round trip")
	}
	st, err := h.envd.Stat(ctx, "/tmp/big.bin")
	if err != nil || st.Size != size {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
}

func TestFilesystem_Operations(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{mode: mode})
			ctx := context.Background()
			e := h.envd
			before := time.Now().Add(-time.Minute)
			dir, err := e.MakeDir(ctx, "/tmp/fs/a/b")
			if err != nil {
				t.Fatal(err)
			}
			if dir.Type != sandbox.EntryDirectory || dir.Path != "/tmp/fs/a/b" || dir.Name != "b" || dir.Mode.Perm() != 0o755 ||
				dir.Permissions != "drwxr-xr-x" || dir.Owner != "user" {
				t.Errorf("MakeDir = %+v", dir)
			}
			if _, err := e.WriteText(ctx, "/tmp/fs/a/f.txt", "12345"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.RunOutput(ctx, "ln -s /tmp/fs/a/f.txt /tmp/fs/link", nil); err != nil {
				t.Fatal(err)
			}

			f, err := e.Stat(ctx, "/tmp/fs/a/f.txt")
			if err != nil {
				t.Fatal(err)
			}
			if f.Type != sandbox.EntryFile || f.Size != 5 || f.Name != "f.txt" || f.Permissions == "" || f.Mode.Perm() == 0 ||
				f.ModifiedTime.Before(before) || f.ModifiedTime.Location() != time.UTC {
				t.Errorf("Stat file = %+v", f)
			}
			l, err := e.Stat(ctx, "/tmp/fs/link")
			if err != nil {
				t.Fatal(err)
			}
			if l.Type != sandbox.EntrySymlink || l.TargetType != sandbox.EntryFile || l.SymlinkTarget != "/tmp/fs/a/f.txt" {
				t.Errorf("Stat symlink = %+v", l)
			}

			list, err := e.ListDir(ctx, "/tmp/fs", 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(list); got != "/tmp/fs/a,/tmp/fs/link" {
				t.Errorf("ListDir depth 1 = %s", got)
			}
			list, err = e.ListDir(ctx, "/tmp/fs", 3)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(list); got != "/tmp/fs/a,/tmp/fs/a/b,/tmp/fs/a/f.txt,/tmp/fs/link" {
				t.Errorf("ListDir depth 3 = %s", got)
			}

			moved, err := e.Move(ctx, "/tmp/fs/a/f.txt", "/tmp/fs/g.txt")
			if err != nil || moved.Path != "/tmp/fs/g.txt" || moved.Type != sandbox.EntryFile {
				t.Fatalf("Move = %+v, %v", moved, err)
			}
			if err := e.Remove(ctx, "/tmp/fs/a"); err != nil {
				t.Fatal(err)
			}
			_, err = e.Stat(ctx, "/tmp/fs/a")
			wantErr(t, err, sandbox.OpFilesystemStat, sandbox.NotFound)

			// Relative paths resolve against the home.
			home, err := e.MakeDir(ctx, "rel/dir")
			if err != nil || home.Path != "/home/user/rel/dir" {
				t.Fatalf("relative MakeDir = %+v, %v", home, err)
			}
		})
	}
}

func names(entries []sandbox.EntryInfo) string {
	var s []string
	for _, e := range entries {
		s = append(s, e.Path)
	}
	return strings.Join(s, ",")
}

// TestEnvd_ErrorCategoriesFromDaemon drives every failure the fake daemon
// can produce and checks the category, the route and that the text leaks
// nothing: not the daemon's message (which holds the path), the host name
// (which holds the sandbox ID and domain) nor the token.
func TestEnvd_ErrorCategoriesFromDaemon(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{mode: mode, cfg: fakeenvd.Config{DiskQuota: 1 << 20}})
			ctx := context.Background()
			e := h.envd
			missing := canaryDir + "/missing"

			// Missing paths.
			_, err := e.Stat(ctx, missing)
			wantErr(t, err, sandbox.OpFilesystemStat, sandbox.NotFound)
			_, err = e.ListDir(ctx, missing, 1)
			wantErr(t, err, sandbox.OpFilesystemListDir, sandbox.NotFound)
			if err := e.Remove(ctx, missing); err != nil { // os.RemoveAll semantics
				t.Errorf("Remove(missing) = %v", err)
			}
			_, err = e.Move(ctx, missing, canaryDir+"/other")
			wantErr(t, err, sandbox.OpFilesystemMove, sandbox.NotFound)
			_, err = e.Download(ctx, missing)
			if got := wantErr(t, err, sandbox.OpFilesDownload, sandbox.NotFound); got.HTTPStatus != 404 {
				t.Errorf("status %d", got.HTTPStatus)
			}
			_, _, err = e.ReadFile(ctx, missing, 10)
			wantErr(t, err, sandbox.OpFilesDownload, sandbox.NotFound)

			// Directories where files are expected, and the reverse.
			if _, err := e.MakeDir(ctx, canaryDir); err != nil {
				t.Fatal(err)
			}
			_, err = e.Download(ctx, canaryDir)
			if got := wantErr(t, err, sandbox.OpFilesDownload, sandbox.InvalidArgument); got.HTTPStatus != 400 {
				t.Errorf("status %d", got.HTTPStatus)
			}
			_, err = e.Upload(ctx, canaryDir, strings.NewReader("x"))
			wantErr(t, err, sandbox.OpFilesUpload, sandbox.InvalidArgument)
			_, err = e.MakeDir(ctx, canaryDir)
			if got := wantErr(t, err, sandbox.OpFilesystemMakeDir, sandbox.Conflict); got.Code != "already_exists" {
				t.Errorf("code %q", got.Code)
			}
			if _, err := e.WriteText(ctx, canaryDir+"/file", "x"); err != nil {
				t.Fatal(err)
			}
			_, err = e.ListDir(ctx, canaryDir+"/file", 1)
			wantErr(t, err, sandbox.OpFilesystemListDir, sandbox.InvalidArgument)

			// The disk quota: 507 on upload.
			_, err = e.Upload(ctx, canaryDir+"/big", &patternReader{n: 2 << 20})
			if got := wantErr(t, err, sandbox.OpFilesUpload, sandbox.ProviderError); got.HTTPStatus != 507 || got.Code != "insufficient_storage" {
				t.Errorf("quota: status %d code %q", got.HTTPStatus, got.Code)
			}
			_, err = e.UploadMultipart(ctx, canaryDir+"/big", &patternReader{n: 2 << 20})
			wantErr(t, err, sandbox.OpFilesUpload, sandbox.ProviderError)

			// An unknown user.
			nobody := h.sb.Envd(&sandbox.EnvdOptions{User: "nobody-canary"})
			_, err = nobody.Stat(ctx, "/tmp")
			wantErr(t, err, sandbox.OpFilesystemStat, sandbox.Unauthenticated)
			_, err = nobody.Download(ctx, canaryDir+"/file")
			wantErr(t, err, sandbox.OpFilesDownload, sandbox.Unauthenticated)

			// Unknown processes.
			err = e.SendSignal(ctx, 4242, sandbox.SIGTERM)
			wantErr(t, err, sandbox.OpProcessSendSignal, sandbox.NotFound)

			// The daemon goes away: the edge answers 502.
			h.daemon.Close()
			_, err = e.Stat(ctx, "/tmp")
			wantErr(t, err, sandbox.OpFilesystemStat, sandbox.Unavailable)
			_, err = e.Run(ctx, "true", nil)
			wantErr(t, err, sandbox.OpProcessStart, sandbox.Unavailable)
			_, err = e.ListProcesses(ctx)
			wantErr(t, err, sandbox.OpProcessList, sandbox.Unavailable)
			_, err = e.Download(ctx, canaryDir+"/file")
			if got := wantErr(t, err, sandbox.OpFilesDownload, sandbox.Unavailable); got.HTTPStatus != 502 {
				t.Errorf("status %d", got.HTTPStatus)
			}
			_, err = e.Upload(ctx, canaryDir+"/file", strings.NewReader("x"))
			wantErr(t, err, sandbox.OpFilesUpload, sandbox.Unavailable)

			// And then the server is gone altogether.
			h.srv.Close()
			_, err = e.Stat(ctx, "/tmp")
			wantErr(t, err, sandbox.OpFilesystemStat, sandbox.Unavailable)
			_, err = e.Download(ctx, "/tmp/x")
			wantErr(t, err, sandbox.OpFilesDownload, sandbox.Unavailable)
			_, err = e.StartBackground(ctx, "true", nil)
			wantErr(t, err, sandbox.OpProcessStart, sandbox.Unavailable)
		})
	}
}

func TestEnvd_WrongTokenIsUnauthenticated(t *testing.T) {
	wrong := "canary-token-wrong-11aa"
	h := newHarness(t, harnessOptions{clientToken: &wrong})
	ctx := context.Background()
	e := h.envd
	check := func(err error, op string) {
		t.Helper()
		wantErr(t, err, op, sandbox.Unauthenticated)
		if strings.Contains(err.Error(), wrong) {
			t.Errorf("error text %q holds the token", err)
		}
	}
	_, err := e.Stat(ctx, "/tmp")
	check(err, sandbox.OpFilesystemStat)
	_, err = e.Run(ctx, "true", nil)
	check(err, sandbox.OpProcessStart)
	_, err = e.StartBackground(ctx, "true", nil)
	check(err, sandbox.OpProcessStart)
	_, err = e.ListProcesses(ctx)
	check(err, sandbox.OpProcessList)
	_, err = e.Download(ctx, "/etc/hostname")
	if got := wantErr(t, err, sandbox.OpFilesDownload, sandbox.Unauthenticated); got.HTTPStatus != 401 {
		t.Errorf("status %d", got.HTTPStatus)
	}
	_, err = e.Upload(ctx, "/tmp/x", strings.NewReader("x"))
	check(err, sandbox.OpFilesUpload)
	_, err = e.UploadMultipart(ctx, "/tmp/x", strings.NewReader("x"))
	check(err, sandbox.OpFilesUpload)
}

// TestEnvd_EntryModeIsFileMode checks that Mode holds the permission bits
// and Permissions the daemon's full rendering.
func TestEnvd_EntryModeIsFileMode(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	st, err := h.envd.Stat(context.Background(), "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if st.Type != sandbox.EntryDirectory || st.TargetType != sandbox.EntryDirectory || st.Mode != 0o777 || st.Permissions != "dtrwxrwxrwx" {
		t.Errorf("mode of /tmp = %v (%s)", st.Mode, st.Permissions)
	}
}
