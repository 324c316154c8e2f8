package evidence

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

//go:embed render.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"seconds": func(ms int64) string { return seconds(time.Duration(ms) * time.Millisecond) },
	"utc":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"join":    strings.Join,
	"pretty":  prettyJSON,
	"anchor":  func(id string) string { return "spec-" + id },
}).Parse(pageTemplate))

// renderMaxExchange bounds each rendered argument or result.
const renderMaxExchange = 32 << 10

type pageData struct {
	Dir        string
	Manifest   Manifest
	Config     string
	Cloud      bool
	Problems   []Problem
	ReadError  string
	Totals     Totals
	Specs      []pageSpec
	Unassigned []Exchange
	ServerLog  string
	Checksums  string
}

type pageSpec struct {
	SpecResult
	Class      string
	Transcript []Exchange
}

// Render writes one self-contained HTML page for the bundle in dir: its
// verification status, provenance, results table, each spec's transcript
// and the server log. It needs no network and loads nothing else. A bundle
// that fails verification is still rendered, with its problems on top.
func Render(w io.Writer, dir string) error {
	b, readErr := Read(dir)
	if b == nil {
		return readErr
	}
	d := pageData{Dir: filepath.Base(filepath.Clean(dir)), Manifest: b.Manifest, Cloud: b.Manifest.Mode == ModeCloud, Totals: Count(b.Results)}
	if readErr != nil {
		d.ReadError = readErr.Error()
	}
	var verr *VerifyError
	if err := Verify(dir, nil); errors.As(err, &verr) {
		d.Problems = verr.Problems
	}
	if cfg, err := json.MarshalIndent(b.Manifest.Config, "", "  "); err == nil {
		d.Config = string(cfg)
	}
	bySpec := map[string][]Exchange{}
	for _, ex := range b.Transcript {
		bySpec[ex.Spec] = append(bySpec[ex.Spec], ex)
	}
	known := map[string]bool{}
	for _, r := range b.Results {
		known[r.ID] = true
	}
	for _, ex := range b.Transcript {
		if !known[ex.Spec] {
			d.Unassigned = append(d.Unassigned, ex)
		}
	}
	for _, r := range b.Results {
		class := "passed"
		switch {
		case r.Skipped():
			class = "skipped"
		case r.Failed():
			class = "failed"
		}
		d.Specs = append(d.Specs, pageSpec{SpecResult: r, Class: class, Transcript: bySpec[r.ID]})
	}
	d.ServerLog = capText(b.ServerLog, 1<<20)
	if sums, err := os.ReadFile(filepath.Join(dir, FileChecksums)); err == nil {
		d.Checksums = string(sums)
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, d); err != nil {
		return fmt.Errorf("evidence: render: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// RenderFile renders the bundle in dir to the file out.
func RenderFile(dir, out string) error {
	var buf bytes.Buffer
	if err := Render(&buf, dir); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return capText(string(raw), renderMaxExchange)
	}
	return capText(b.String(), renderMaxExchange)
}

func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n... (%d more bytes in the bundle)", len(s)-n)
}
