package fakeenvd

import (
	"context"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
)

const benchBytes = 10_000_000

// BenchmarkStartOutput10MB streams 10 MB of process output through the
// HTTP surface to a Connect client (JSON codec, base64 bytes).
func BenchmarkStartOutput10MB(b *testing.B) {
	d := newDaemon(b, Config{})
	srv := httptest.NewServer(d)
	defer srv.Close()
	c := connect.NewClient[envdapi.StartRequest, envdapi.StartResponse](srv.Client(), srv.URL+envdapi.ProcessStartProcedure, connect.WithCodec(envdapi.Codec{}))
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	for b.Loop() {
		st, err := c.CallServerStream(context.Background(), connect.NewRequest(bashReq("yes | head -c 10000000")))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for st.Receive() {
			if ev := st.Msg().Event; ev.Data != nil {
				n += len(ev.Data.Stdout)
			}
		}
		if err := st.Err(); err != nil || n != benchBytes {
			b.Fatalf("got %d bytes, err %v", n, err)
		}
		st.Close()
	}
}

// BenchmarkProcessOutput10MB measures the shell and event pipeline alone.
func BenchmarkProcessOutput10MB(b *testing.B) {
	d := newDaemon(b, Config{})
	a, _ := d.account("")
	b.SetBytes(benchBytes)
	b.ReportAllocs()
	for b.Loop() {
		_, sub, err := d.startProcess(a, bashReq("head -c 10000000 /dev/zero"), 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for ev := range sub.ch {
			if ev.Data != nil {
				n += len(ev.Data.Stdout)
			}
		}
		if n != benchBytes {
			b.Fatalf("got %d bytes", n)
		}
	}
}
