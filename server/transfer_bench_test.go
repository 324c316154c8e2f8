package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// transferBytes is the payload of the transfer benchmarks: 8 MiB.
const transferBytes = 8 << 20

// BenchmarkFiguresTransfer moves 8 MiB with upload_file and download_file
// through the server (in-memory pipe and Streamable HTTP on loopback) beside
// the SDK's own call that the tool makes underneath ((*Envd).Upload and
// (*Envd).ReadFile against the same in-process fake): the ratio of the two
// is the server's cost. The url rows are BIN-3's way: the tool call with
// transfer "url", then the bytes through the signed URL with a plain HTTP
// request. peak-heap-x is the largest heap growth seen during
// one call over the payload size, for the whole process (client, server and
// the fake holding the file). Run with
//
//	go test ./server/ -run '^$' -bench 'FiguresTransfer' -benchmem -count 3
func BenchmarkFiguresTransfer(b *testing.B) {
	payload := make([]byte, transferBytes)
	if _, err := rand.Read(payload); err != nil {
		b.Fatal(err)
	}
	encoded := base64.StdEncoding.EncodeToString(payload)
	for _, dir := range []string{"upload", "download"} {
		for _, via := range []string{"memory", "http", "url-memory", "url-http", "sdk"} {
			b.Run(dir+"/"+via, func(b *testing.B) {
				r := newFigureRig(b)
				ctx := context.Background()
				const path = "/home/user/payload.bin"
				var op func()
				if via == "sdk" {
					sbx, err := r.platform.Create(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					envd := sbx.Envd(nil)
					if _, err := envd.Upload(ctx, path, bytes.NewReader(payload)); err != nil {
						b.Fatal(err)
					}
					op = map[string]func(){
						"upload": func() {
							if _, err := envd.Upload(ctx, path, bytes.NewReader(payload)); err != nil {
								b.Fatal(err)
							}
						},
						"download": func() {
							data, _, err := envd.ReadFile(ctx, path, transferBytes)
							if err != nil || len(data) != transferBytes {
								b.Fatalf("read %d bytes: %v", len(data), err)
							}
						},
					}[dir]
				} else if tr, ok := strings.CutPrefix(via, "url-"); ok {
					op = urlTransfer(b, r, tr, dir, path, payload)
				} else {
					cs := r.connect(b, via)
					defer cs.Close()
					id := call(b, cs, "create_sandbox", map[string]any{})["sandbox_id"]
					up := map[string]any{"sandbox_id": id, "path": path, "data_base64": encoded}
					call(b, cs, "upload_file", up)
					op = map[string]func(){
						"upload": func() { transferCall(b, cs, "upload_file", up, "size", transferBytes) },
						"download": func() {
							transferCall(b, cs, "download_file", map[string]any{"sandbox_id": id, "path": path}, "size", transferBytes)
						},
					}[dir]
				}
				op() // warm up
				b.SetBytes(transferBytes)
				b.ResetTimer()
				for range b.N {
					op()
				}
				b.StopTimer()
				// Sampling the heap stops the world: once, outside the timing.
				peak := &heapPeak{}
				peak.start()
				op()
				peak.stop()
				b.ReportMetric(float64(peak.peak)/transferBytes, "peak-heap-x")
			})
		}
	}
}

// urlTransfer is one transfer the BIN-3 way: the tool call with transfer
// "url" over transport, then the bytes straight to or from the signed URL
// with a plain request on the fake's HTTP client (the transport the SDK
// rows use).
func urlTransfer(b *testing.B, r *figureRig, transport, dir, path string, payload []byte) func() {
	ctx := context.Background()
	cs := r.connect(b, transport)
	b.Cleanup(func() { _ = cs.Close() })
	id := call(b, cs, "create_sandbox", map[string]any{})["sandbox_id"]
	hc := r.fake.HTTPClient()
	tool, method := "upload_file", http.MethodPost
	if dir == "download" {
		tool, method = "download_file", http.MethodGet
	}
	args := map[string]any{"sandbox_id": id, "path": path, "transfer": "url"}
	send := func(method, u string, body io.Reader) []byte {
		req, err := http.NewRequestWithContext(ctx, method, u, body)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		res, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		// Sized from Content-Length, as the SDK's ReadFile does.
		buf := bytes.NewBuffer(make([]byte, 0, max(res.ContentLength, 0)+bytes.MinRead))
		_, err = buf.ReadFrom(res.Body)
		data := buf.Bytes()
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("%s of the transfer URL: %d %v", method, res.StatusCode, err)
		}
		return data
	}
	up := call(b, cs, "upload_file", map[string]any{"sandbox_id": id, "path": path, "transfer": "url"})
	send(http.MethodPost, up["url"].(string), bytes.NewReader(payload))
	return func() {
		u := call(b, cs, tool, args)["url"].(string)
		if dir == "upload" {
			send(method, u, bytes.NewReader(payload))
			return
		}
		if data := send(method, u, nil); len(data) != len(payload) {
			b.Fatalf("GET of the transfer URL: %d bytes", len(data))
		}
	}
}

// transferCall makes one call and checks the size it reports, without
// decoding the result more than the client already has.
func transferCall(b *testing.B, cs *mcp.ClientSession, tool string, args map[string]any, key string, want int) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %v", tool, err, res)
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok || m[key] != float64(want) {
		b.Fatalf("%s: %s = %v, want %d", tool, key, m[key], want)
	}
}

// heapPeak samples the heap every millisecond during a call and keeps the
// largest growth over the heap at the call's start (after a collection).
type heapPeak struct {
	peak uint64
	done chan struct{}
	wg   sync.WaitGroup
	base uint64
	cur  atomic.Uint64
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func (h *heapPeak) start() {
	runtime.GC()
	h.base = heapAlloc()
	h.cur.Store(0)
	h.done = make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if a := heapAlloc(); a > h.base && a-h.base > h.cur.Load() {
				h.cur.Store(a - h.base)
			}
			select {
			case <-h.done:
				return
			case <-t.C:
			}
		}
	}()
}

func (h *heapPeak) stop() {
	close(h.done)
	h.wg.Wait()
	h.peak = max(h.peak, h.cur.Load())
}
