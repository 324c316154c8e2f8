package sandbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// streamDaemon answers the control plane's create and, for the daemon,
// every process start with the bytes in body, as a Connect stream.
type streamDaemon struct{ body atomic.Pointer[[]byte] }

func (d *streamDaemon) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	var body []byte
	switch {
	case r.URL.Host == "api.fuzz.test" && r.URL.Path == "/sandboxes":
		resp.StatusCode = http.StatusCreated
		resp.Header.Set("Content-Type", "application/json")
		body = []byte(`{"sandboxID":"fuzzsbx","templateID":"base","clientID":"c","envdVersion":"0.5.7","envdAccessToken":"tok","domain":"fuzz.test"}`)
	case r.URL.Path == envdapi.ProcessStartProcedure:
		resp.Header.Set("Content-Type", "application/connect+json")
		body = *d.body.Load()
	default:
		resp.Header.Set("Content-Type", "application/json")
		body = []byte(`{}`)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// envelope frames one Connect stream message (flags 0) or, with end, the
// end-of-stream message (flags 2).
func envelope(payload string, end bool) []byte {
	b := make([]byte, 5, 5+len(payload))
	if end {
		b[0] = 2
	}
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func stream(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// streamOutcome is what a process stream says, decoded by the rules of
// [sandbox.Envd.Run]: keepalives skipped, a start event first, then output
// until the end event.
type streamOutcome struct {
	ok             bool // a start event, then an end event, on well-formed messages
	stdout, stderr []byte
	exit           int
}

// referenceRun decodes a Connect stream envelope by envelope, independently
// of the SDK and of connect-go.
func referenceRun(b []byte) streamOutcome {
	var o streamOutcome
	started := false
	for len(b) >= 5 {
		flags, n := b[0], binary.BigEndian.Uint32(b[1:5])
		if uint64(len(b)-5) < uint64(n) || flags != 0 {
			return o // truncated, compressed, end of stream or unknown: no further event
		}
		payload := b[5 : 5+n]
		b = b[5+n:]
		var msg envdapi.StartResponse
		if json.Unmarshal(payload, &msg) != nil {
			return o
		}
		ev := msg.Event
		if !started {
			switch {
			case ev.Keepalive != nil:
				continue
			case ev.Start != nil:
				started = true
				continue
			default:
				return o
			}
		}
		switch {
		case ev.Data != nil:
			o.stdout = append(o.stdout, ev.Data.Stdout...)
			o.stderr = append(o.stderr, ev.Data.Stderr...)
		case ev.End != nil:
			o.ok, o.exit = true, int(ev.End.ExitCode)
			return o
		}
	}
	return o
}

// FuzzProcessStream feeds arbitrary bytes as the daemon's answer to a
// command's start: the SDK's envd stream decoding must never panic or
// hang, must fail only with a categorized *sandbox.Error whose text holds
// nothing of the answer, and must report exactly the output and exit code
// that an independent decoder finds, whenever there is one.
func FuzzProcessStream(f *testing.F) {
	start := envelope(`{"event":{"start":{"pid":7}}}`, false)
	keep := envelope(`{"event":{"keepalive":{}}}`, false)
	out := envelope(`{"event":{"data":{"stdout":"aGVsbG8K"}}}`, false)
	errOut := envelope(`{"event":{"data":{"stderr":"b29wcwo="}}}`, false)
	end := envelope(`{"event":{"end":{"exitCode":3,"exited":true,"status":"exit status 3"}}}`, false)
	eos := envelope(`{}`, true)
	for _, s := range [][]byte{
		stream(start, out, errOut, end, eos),
		stream(keep, start, keep, out, end, eos),
		stream(start, end),
		stream(start, out, eos),
		stream(out, start, end, eos),
		stream(start, out, end, out, eos),
		stream(start, envelope(`{"event":{"data":{"stdout":"aGVsbG8K"},"end":{"exitCode":1}}}`, false), end, eos),
		stream(start, envelope(`{"event":{"keepalive":{},"start":{"pid":8}}}`, false), end, eos),
		stream(start, envelope(`{"error":{"code":"not_found","message":"canary-gone"}}`, true)),
		stream(start, envelope(`{"event":{"data":{"stdout":"!!"}}}`, false), end, eos),
		stream(start, []byte{1, 0, 0, 0, 2, '{', '}'}, end, eos),
		stream(start, []byte{0, 0xff, 0xff, 0xff, 0xff}),
		stream(start, []byte{0, 0, 0}),
		envelope(`{"error":{"code":"unavailable","message":"canary-down"}}`, true),
		[]byte("<html>canary-html</html>"),
		nil,
	} {
		f.Add(s)
	}
	d := &streamDaemon{}
	empty := []byte{}
	d.body.Store(&empty)
	env := map[string]string{sandbox.EnvAPIKey: "e2b_fuzz", sandbox.EnvAPIURL: "https://api.fuzz.test", sandbox.EnvSandboxURL: "https://sandbox.fuzz.test"}
	p, err := sandbox.NewPlatform(&sandbox.Options{HTTPClient: &http.Client{Transport: d}, Getenv: func(k string) string { return env[k] }, RequestTimeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	sb, err := p.Create(context.Background(), nil)
	if err != nil {
		f.Fatal(err)
	}
	e := sb.Envd(nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		d.body.Store(&body)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := e.RunOutput(ctx, "echo hi", &sandbox.CommandOptions{Timeout: 10 * time.Second})
		if ctx.Err() != nil {
			t.Fatal("the decoder did not finish a finite stream")
		}
		want := referenceRun(body)
		if err != nil {
			var se *sandbox.Error
			if !errors.As(err, &se) || !slices.Contains(sandbox.Categories(), se.Category) || se.Op != sandbox.OpProcessStart {
				t.Fatalf("error %v (%T) is not a categorized *sandbox.Error of the start", err, err)
			}
			if se.Category == sandbox.Internal || se.Category == sandbox.Timeout {
				t.Fatalf("error %v for a finite answer", err)
			}
			if strings.Contains(err.Error(), "canary") || strings.Contains(err.Error(), "fuzz.test") {
				t.Fatalf("error text %q holds the answer or the address", err)
			}
			if want.ok {
				t.Fatalf("Run failed (%v) on a stream that ends with exit %d", err, want.exit)
			}
			return
		}
		if !want.ok {
			t.Fatalf("Run succeeded (exit %d) on a stream the reference finds incomplete", res.ExitCode)
		}
		if res.ExitCode != want.exit || !bytes.Equal(res.Stdout, want.stdout) || !bytes.Equal(res.Stderr, want.stderr) {
			t.Fatalf("Run gave exit %d, stdout %q, stderr %q; the reference exit %d, stdout %q, stderr %q",
				res.ExitCode, res.Stdout, res.Stderr, want.exit, want.stdout, want.stderr)
		}
	})
}
