package server_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// downloadBenchBytes is the file of BenchmarkDownload12MiB.
const downloadBenchBytes = 12 << 20

// countingTransport counts the response body bytes it reads.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// BenchmarkDownload12MiB is one inline download_file of a 12 MiB file over
// Streamable HTTP on loopback (2025-11-25 session): response-bytes is the
// size of the HTTP response body of the call, peak-heap-MB the largest
// heap growth of the whole process during one call (client, server and
// the fake holding the file). Run with
//
//	go test ./server/ -run '^$' -bench 'Download12MiB' -benchmem -count 3
func BenchmarkDownload12MiB(b *testing.B) {
	r := newFigureRig(b)
	ctx := context.Background()
	r.httpSrv = httptest.NewServer(r.srv.HTTPHandler(nil))
	counter := &countingTransport{next: http.DefaultTransport}
	t := &mcp.StreamableClientTransport{Endpoint: r.httpSrv.URL + server.MCPPath, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: counter}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	payload := make([]byte, downloadBenchBytes)
	if _, err := rand.Read(payload); err != nil {
		b.Fatal(err)
	}
	id := call(b, cs, "create_sandbox", map[string]any{})["sandbox_id"]
	const path = "/home/user/payload.bin"
	call(b, cs, "upload_file", map[string]any{"sandbox_id": id, "path": path, "data_base64": base64.StdEncoding.EncodeToString(payload)})
	payload = nil
	args := map[string]any{"sandbox_id": id, "path": path}
	op := func() int64 {
		before := counter.n.Load()
		transferCall(b, cs, "download_file", args, "size", downloadBenchBytes)
		return counter.n.Load() - before
	}
	op() // warm up
	b.SetBytes(downloadBenchBytes)
	b.ResetTimer()
	var size int64
	for range b.N {
		size = op()
	}
	b.StopTimer()
	peak := &heapPeak{}
	peak.start()
	op()
	peak.stop()
	b.ReportMetric(float64(size), "response-bytes")
	b.ReportMetric(float64(peak.peak)/(1<<20), "peak-heap-MB")
}
