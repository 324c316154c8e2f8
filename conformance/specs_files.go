package conformance

import (
	"context"
	"path"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// filesReadCap is the default cap of read_file (FILE-2).
const filesReadCap = 1 << 20

// filesEntry is one entry of list_files (FILE-3).
type filesEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

func filesSpecs() []Spec {
	return []Spec{
		{ID: "files.write-creates-parents", Rules: []string{"FILE-1", "FILE-3"}, Tools: []string{"write_file", "list_files"}, Body: specWriteCreatesParents,
			Title: "write_file creates missing parent directories and reports the bytes written, counting UTF-8 bytes, not characters"},
		{ID: "files.read-round-trip", Rules: []string{"FILE-1", "FILE-2"}, Tools: []string{"write_file", "read_file"}, Body: specReadRoundTrip,
			Title: "read_file returns exactly the text write_file wrote, including multi-byte UTF-8, control characters, an empty file and an overwrite"},
		{ID: "files.read-non-utf8-points-to-download", Rules: []string{"FILE-2"}, Tools: []string{"read_file", "run_command"}, Body: specReadNonUTF8PointsToDownload,
			Title: "read_file of a file that is not valid UTF-8 is a tool error that points to download_file"},
		{ID: "files.read-over-cap-points-to-download", Rules: []string{"FILE-2"}, Tools: []string{"read_file", "run_command"}, Body: specReadOverCapPointsToDownload,
			Title: "read_file of a text file larger than 1 MiB is a tool error that points to download_file, while a file of exactly 1 MiB reads whole"},
		{ID: "files.list-depth", Rules: []string{"FILE-3"}, Tools: []string{"list_files", "write_file", "run_command"}, Body: specListDepth,
			Title: "list_files returns name, absolute path, type (file, directory, symlink) and size of each entry, down to the given depth"},
		{ID: "files.missing-path-not-found", Rules: []string{"FILE-4"}, Tools: []string{"read_file", "list_files"}, Body: specMissingPathNotFound,
			Title: "read_file and list_files of a path that does not exist are tool errors of category not_found"},
		implicitCreateSpec("files.implicit-create", "write_file", []string{"write_file", "read_file", "get_sandbox"}, specFilesImplicitCreate),
		implicitCreateSpec("files.list-implicit-create", "list_files", []string{"list_files", "write_file", "get_sandbox"}, specListImplicitCreate),
		renewsOwnedSpec("files.renews-owned", []string{"write_file", "read_file", "list_files"}, specFilesRenewsOwned),
		externalNoRenewSpec("files.external-no-renew", []string{"write_file", "read_file", "list_files"}, specExternalNoRenew),
	}
}

func specWriteCreatesParents(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("parents")
	file := dir + "/a/b/c/note.txt"
	content := "héllo wörld ✓ 🚀\nzweite Zeile\t€\n"
	gomega.Expect(len(content)).NotTo(gomega.Equal(len([]rune(content))))
	w := filesWrite(ctx, tc, s, file, content)
	gomega.Expect(w.BytesWritten).To(gomega.Equal(int64(len(content))), "bytes_written counts UTF-8 bytes (%d), not characters (%d)", len(content), len([]rune(content)))
	gomega.Expect(w.Path).To(gomega.Equal(file), "path is the path given")
	for _, p := range []string{dir, dir + "/a", dir + "/a/b"} {
		entries := filesList(ctx, tc, s, p, 1)
		child := path.Join(p, strings.Split(strings.TrimPrefix(file, p+"/"), "/")[0])
		gomega.Expect(entries).To(gomega.HaveKey(child), "list_files %s: the created parent %s is missing", p, child)
		gomega.Expect(entries[child].Type).To(gomega.Equal("directory"), "%s must be a directory", child)
	}
	entries := filesList(ctx, tc, s, dir+"/a/b/c", 1)
	gomega.Expect(entries).To(gomega.HaveKey(file))
	gomega.Expect(entries[file]).To(gomega.Equal(filesEntry{Name: "note.txt", Path: file, Type: "file", Size: int64(len(content))}))
}

func specReadRoundTrip(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("roundtrip")
	contents := map[string]string{
		"unicode.txt": "Grüße, 世界! 👋🏽 ∑ 𝔘𝔫𝔦\n",
		"control.txt": "tab\tcr\r\nnul-free \x01\x1f bell\a\n  trailing spaces  \n\n",
		"json.txt":    `{"quote": "\"", "backslash": "\\", "html": "<a href='x'>&amp;</a>"}`,
		"noeol.txt":   "no newline at the end",
		"empty.txt":   "",
	}
	for name, content := range contents {
		w := filesWrite(ctx, tc, s, dir+"/"+name, content)
		gomega.Expect(w.BytesWritten).To(gomega.Equal(int64(len(content))), "%s: bytes_written", name)
	}
	for name, content := range contents {
		got := filesRead(ctx, tc, s, dir+"/"+name)
		gomega.Expect(got.Path).To(gomega.Equal(dir + "/" + name))
		gomega.Expect(got.Content).To(gomega.Equal(content), "%s: read_file must return the bytes written", name)
	}
	// Overwriting with shorter text leaves no trace of the old content.
	file := dir + "/unicode.txt"
	w := filesWrite(ctx, tc, s, file, "kurz")
	gomega.Expect(w.BytesWritten).To(gomega.Equal(int64(4)))
	gomega.Expect(filesRead(ctx, tc, s, file).Content).To(gomega.Equal("kurz"), "write_file replaces the file's content")
}

func specReadNonUTF8PointsToDownload(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("nonutf8")
	s.runCommand(ctx, "mkdir -p "+dir+
		" && printf 'ok\\377\\376end' > "+dir+"/latin.bin"+
		" && printf 'caf\\303' > "+dir+"/cut.bin"+
		" && printf 'x\\0y' > "+dir+"/nul.txt"+
		" && wc -c "+dir+"/latin.bin "+dir+"/cut.bin "+dir+"/nul.txt")
	for _, f := range []string{"latin.bin", "cut.bin"} {
		r := s.Call(ctx, "read_file", map[string]any{"path": dir + "/" + f})
		filesExpectPointsToDownload(tc, r, f+" (not valid UTF-8)")
	}
	// A NUL byte is valid UTF-8: such a file is text and reads back as is.
	gomega.Expect(filesRead(ctx, tc, s, dir+"/nul.txt").Content).To(gomega.Equal("x\x00y"))
}

func specReadOverCapPointsToDownload(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("bigtext")
	out := s.runCommand(ctx, "mkdir -p "+dir+" && cd "+dir+
		" && yes | head -c 1048576 > at-cap.txt && yes | head -c 1048577 > over-cap.txt && yes | head -c 1100000 > big.txt"+
		" && wc -c < at-cap.txt && wc -c < over-cap.txt")
	gomega.Expect(strings.Fields(out.Stdout)).To(gomega.Equal([]string{"1048576", "1048577"}), "setup: file sizes")
	for _, f := range []string{"over-cap.txt", "big.txt"} {
		r := s.Call(ctx, "read_file", map[string]any{"path": dir + "/" + f})
		filesExpectPointsToDownload(tc, r, f+" (over 1 MiB)")
		gomega.Expect(len(r.JSON)).To(gomega.BeNumerically("<", 8<<10), "%s: the error must not carry the file's content", f)
	}
	got := filesRead(ctx, tc, s, dir+"/at-cap.txt")
	gomega.Expect(len(got.Content)).To(gomega.Equal(filesReadCap), "a file of exactly the cap is not over it")
	gomega.Expect(got.Content == strings.Repeat("y\n", filesReadCap/2)).To(gomega.BeTrue(), "a file at the cap reads back whole")
}

func specListDepth(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	dir := scratchDir("tree")
	filesWrite(ctx, tc, s, dir+"/a.txt", "abc")
	filesWrite(ctx, tc, s, dir+"/sub/b.txt", "hello\n")
	filesWrite(ctx, tc, s, dir+"/sub/deeper/c.txt", "1234567")
	filesWrite(ctx, tc, s, dir+"/sub/deeper/deepest/d.txt", "d")
	s.runCommand(ctx, "cd "+dir+" && ln -s a.txt link")

	want := map[string]filesEntry{
		dir + "/a.txt":                    {Name: "a.txt", Type: "file", Size: 3},
		dir + "/link":                     {Name: "link", Type: "symlink"},
		dir + "/sub":                      {Name: "sub", Type: "directory"},
		dir + "/sub/b.txt":                {Name: "b.txt", Type: "file", Size: 6},
		dir + "/sub/deeper":               {Name: "deeper", Type: "directory"},
		dir + "/sub/deeper/c.txt":         {Name: "c.txt", Type: "file", Size: 7},
		dir + "/sub/deeper/deepest":       {Name: "deepest", Type: "directory"},
		dir + "/sub/deeper/deepest/d.txt": {Name: "d.txt", Type: "file", Size: 1},
	}
	levels := func(p string) int { return strings.Count(strings.TrimPrefix(p, dir), "/") }
	for _, depth := range []int{0, 1, 2, 3} { // 0: depth left out (default 1)
		got := filesList(ctx, tc, s, dir, depth)
		limit := max(depth, 1)
		var wantPaths, gotPaths []string
		for p := range want {
			if levels(p) <= limit {
				wantPaths = append(wantPaths, p)
			}
		}
		for p := range got {
			gotPaths = append(gotPaths, p)
		}
		gomega.Expect(gotPaths).To(gomega.ConsistOf(wantPaths), "list_files depth %d (0 = default): the entries", depth)
		for p, e := range got {
			w := want[p]
			gomega.Expect(e.Name).To(gomega.Equal(w.Name), "%s: name is the entry's base name", p)
			gomega.Expect(e.Type).To(gomega.Equal(w.Type), "%s: type", p)
			if w.Type == "file" {
				gomega.Expect(e.Size).To(gomega.Equal(w.Size), "%s: size in bytes", p)
			}
			gomega.Expect(e.Size).To(gomega.BeNumerically(">=", 0), "%s: size", p)
		}
	}
}

func specMissingPathNotFound(ctx context.Context, tc *TestContext) {
	s := tc.Connect(ctx)
	missing := scratchDir("missing")
	tc.ExpectToolError(s.Call(ctx, "read_file", map[string]any{"path": missing + "/nope.txt"}), "not_found")
	tc.ExpectToolError(s.Call(ctx, "list_files", map[string]any{"path": missing}), "not_found")
	tc.ExpectToolError(s.Call(ctx, "list_files", map[string]any{"path": missing + "/deeper", "depth": 3}), "not_found")
}

func specFilesImplicitCreate(ctx context.Context, tc *TestContext) {
	tc.expectImplicitCreate(ctx, dpImplicitCase{"write_file", map[string]any{"path": "/tmp/sbk-implicit.txt", "content": "x"}}, dpImplicitCase{"read_file", map[string]any{"path": "/tmp/sbk-implicit.txt"}})
}

func specListImplicitCreate(ctx context.Context, tc *TestContext) {
	tc.expectImplicitCreate(ctx, dpImplicitCase{"list_files", map[string]any{"path": "/tmp"}}, dpImplicitCase{"write_file", map[string]any{"path": "/tmp/sbk-implicit.txt", "content": "x"}})
}

func specFilesRenewsOwned(ctx context.Context, tc *TestContext) {
	file := scratchDir("renew") + "/f.txt"
	tc.expectRenewals(ctx, 90, []dpRenewalCase{
		{Tool: "write_file", WantEnvd: true, Args: func(id string) map[string]any {
			return map[string]any{"path": file, "content": "renew", "sandbox_id": id}
		}},
		{Tool: "read_file", WantEnvd: true, Args: func(string) map[string]any {
			return map[string]any{"path": file}
		}},
		{Tool: "list_files", WantEnvd: true, Args: func(id string) map[string]any {
			return map[string]any{"path": path.Dir(file), "depth": 2, "sandbox_id": id}
		}},
	})
}

func specExternalNoRenew(ctx context.Context, tc *TestContext) {
	ext := tc.Seed(fakeprovider.SandboxSeed{})
	s := tc.Connect(ctx)
	dir := scratchDir("ext")
	mark := tc.Fake.Journal().Len()
	filesWrite(ctx, tc, s, dir+"/f.txt", "ext", ext)
	gomega.Expect(filesRead(ctx, tc, s, dir+"/f.txt", ext).Content).To(gomega.Equal("ext"))
	filesListIn(ctx, tc, s, dir, 1, ext)
	tc.expectExternalUntouchedSince("file tools", ext, mark, true)
	gomega.Expect(tc.liveCreated()).To(gomega.BeEmpty(), "naming an external sandbox creates nothing")
}

// filesWriteOut is write_file's result (FILE-1).
type filesWriteOut struct {
	Path         string `json:"path"`
	BytesWritten int64  `json:"bytes_written"`
}

// filesReadOut is read_file's result (FILE-2).
type filesReadOut struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func filesWrite(ctx context.Context, tc *TestContext, s *Session, p, content string, sandboxID ...string) filesWriteOut {
	ginkgo.GinkgoHelper()
	args := map[string]any{"path": p, "content": content}
	if len(sandboxID) > 0 {
		args["sandbox_id"] = sandboxID[0]
	}
	var out filesWriteOut
	tc.decode(s.Call(ctx, "write_file", args), &out, "path", "bytes_written")
	return out
}

func filesRead(ctx context.Context, tc *TestContext, s *Session, p string, sandboxID ...string) filesReadOut {
	ginkgo.GinkgoHelper()
	args := map[string]any{"path": p}
	if len(sandboxID) > 0 {
		args["sandbox_id"] = sandboxID[0]
	}
	var out filesReadOut
	tc.decode(s.Call(ctx, "read_file", args), &out, "path", "content")
	return out
}

// filesList lists dir (depth 0 leaves the argument out) and returns the
// entries by path, checking that no path repeats and every path is
// absolute and below dir.
func filesList(ctx context.Context, tc *TestContext, s *Session, dir string, depth int) map[string]filesEntry {
	ginkgo.GinkgoHelper()
	return filesListIn(ctx, tc, s, dir, depth, "")
}

func filesListIn(ctx context.Context, tc *TestContext, s *Session, dir string, depth int, sandboxID string) map[string]filesEntry {
	ginkgo.GinkgoHelper()
	args := map[string]any{"path": dir}
	if depth > 0 {
		args["depth"] = depth
	}
	if sandboxID != "" {
		args["sandbox_id"] = sandboxID
	}
	var out struct {
		Entries []filesEntry `json:"entries"`
	}
	tc.decode(s.Call(ctx, "list_files", args), &out, "entries")
	byPath := map[string]filesEntry{}
	for _, e := range out.Entries {
		gomega.Expect(byPath).NotTo(gomega.HaveKey(e.Path), "list_files %s: %s listed twice", dir, e.Path)
		gomega.Expect(path.IsAbs(e.Path)).To(gomega.BeTrue(), "list_files %s: path %q is not absolute", dir, e.Path)
		gomega.Expect(strings.HasPrefix(e.Path, dir+"/")).To(gomega.BeTrue(), "list_files %s: %s is not below the listed directory", dir, e.Path)
		gomega.Expect(e.Name).To(gomega.Equal(path.Base(e.Path)), "list_files %s: name of %s", dir, e.Path)
		gomega.Expect([]string{"file", "directory", "symlink"}).To(gomega.ContainElement(e.Type))
		byPath[e.Path] = e
	}
	return byPath
}

// filesExpectPointsToDownload checks FILE-2's error: a categorized tool
// error whose static fields name download_file.
func filesExpectPointsToDownload(tc *TestContext, r *Result, what string) {
	ginkgo.GinkgoHelper()
	e := tc.ExpectToolError(r, "")
	gomega.Expect(e["category"]).NotTo(gomega.BeElementOf("not_found", "internal", "unavailable", "timeout"),
		"read_file %s: the file exists and the daemon answered; the error is about the file's content", what)
	text := ""
	for _, k := range []string{"recovery", "code"} {
		if v, ok := e[k].(string); ok {
			text += v + " "
		}
	}
	gomega.Expect(mentionsTool(tc.Config, text, "download_file")).To(gomega.BeTrue(),
		"read_file %s: the error must point to download_file (FILE-2)", what)
}

// mentionsTool reports whether text names a contract tool, by its contract
// name or by the server's (a tool map's downloadFile is the server's
// download_file).
func mentionsTool(c *Config, text, tool string) bool {
	return strings.Contains(text, tool) || strings.Contains(text, c.toolName(tool))
}
