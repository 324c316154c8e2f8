package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// benchSize is the payload of one benchmark iteration.
const benchSize = 8 << 20

// The three benchmarks below move the same 8 MiB over loopback HTTP/1.1 in
// this process; b.SetBytes makes "go test -bench" print MB/s, and
// -benchmem prints allocations per iteration (divide by 8 for per MiB).
// Allocation figures include the fake daemon's, which runs in the same
// process. BenchmarkIOCopyCeiling is the ceiling: a plain GET whose body
// is io.Copy'd, with no Connect framing, JSON or base64.

// BenchmarkProcessOutput runs a command printing 8 MiB of binary output
// on stdout through Start's event stream (base64 in JSON in Connect
// envelopes) into io.Discard.
func BenchmarkProcessOutput(b *testing.B) {
	h := newHarness(b, harnessOptions{})
	ctx := context.Background()
	cmd := fmt.Sprintf("emit %d 0 32768", benchSize)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		res, err := h.envd.Run(ctx, cmd, &sandbox.CommandOptions{Stdout: io.Discard})
		if err != nil || res.StdoutBytes != benchSize {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// BenchmarkDownload reads an 8 MiB file through GET /files into io.Discard.
func BenchmarkDownload(b *testing.B) {
	h := newHarness(b, harnessOptions{})
	ctx := context.Background()
	if _, err := h.envd.Upload(ctx, "/tmp/bench.bin", &patternReader{n: benchSize}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		n, err := h.envd.DownloadTo(ctx, "/tmp/bench.bin", io.Discard)
		if err != nil || n != benchSize {
			b.Fatalf("%d, %v", n, err)
		}
	}
}

// BenchmarkUpload writes 8 MiB through POST /files (octet-stream).
func BenchmarkUpload(b *testing.B) {
	h := newHarness(b, harnessOptions{})
	ctx := context.Background()
	data := make([]byte, benchSize)
	fillPattern(data, 0, 0)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.envd.Upload(ctx, "/tmp/bench.bin", bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIOCopyCeiling is a plain loopback GET of the same 8 MiB, copied
// with io.Copy into io.Discard: the ceiling for the two above.
func BenchmarkIOCopyCeiling(b *testing.B) {
	data := make([]byte, benchSize)
	fillPattern(data, 0, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	client := srv.Client()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != benchSize {
			b.Fatalf("%d, %v", n, err)
		}
	}
}
