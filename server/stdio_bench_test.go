package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// BenchmarkStdioToolsCall measures one tools/call answered over the stdio
// transport as RunStdio sets it up (lineTransport: strict frame checks,
// the argument stash, then the SDK), written
// and read as raw lines on in-memory pipes so that no client library's
// allocations are counted. unknown_command is get_background_command with
// an ID the session never had: validation, dispatch and a tool error,
// without the provider. get_sandbox reads the session's sandbox from the
// fake provider on loopback, as a real call does. upload_8MiB writes 8 MiB
// (11 MB of base64 in the line) to the sandbox. Run with
//
//	go test ./server -run '^$' -bench 'StdioToolsCall' -benchmem
func BenchmarkStdioToolsCall(b *testing.B) {
	for _, bc := range []struct{ name, call string }{
		{"unknown_command", `"name":"get_background_command","arguments":{"command_id":"bg-0123456789abcdef"}`},
		{"get_sandbox", `"name":"get_sandbox","arguments":{}`},
		{"upload_8MiB", `"name":"upload_file","arguments":{"path":"/tmp/bench.bin","data_base64":"` +
			base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0, 1, 2, 3, 254, 255, 'x', '\n'}, 1<<20)) + `"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fake := fakeprovider.New(nil)
			b.Cleanup(fake.Close)
			p, err := fake.Platform()
			if err != nil {
				b.Fatal(err)
			}
			srv, err := New(&Deps{Platform: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(bc.call) > 1<<20 {
				b.SetBytes(int64(len(bc.call)))
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- srv.Run(ctx, &lineTransport{r: inR, w: outW, maxLine: maxMessageBytes(srv.deps.Limits), stash: &srv.stash})
			}()
			b.Cleanup(func() {
				_ = inW.Close()
				cancel()
				<-done
				_ = outR.Close()
				_ = srv.Shutdown(context.Background())
			})
			out := bufio.NewReaderSize(outR, 1<<20)
			send := func(line string) {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					b.Fatal(err)
				}
			}
			answer := func(id string) []byte {
				line, err := out.ReadSlice('\n')
				if err != nil {
					b.Fatal(err)
				}
				if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`+id+`,"result"`)) {
					b.Fatalf("unexpected answer %.300s", line)
				}
				return line
			}
			send(initializeBody)
			answer("1")
			send(stdioInitialized)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`)
			if line := answer("2"); bytes.Contains(line, []byte(`"isError":true`)) {
				b.Fatalf("create_sandbox: %.300s", line)
			}
			// A check that the call does what it is measured for.
			wantErr := bc.name == "unknown_command"
			reqs := make([][]byte, 2)
			for i := range reqs {
				reqs[i] = []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(10+i) + `,"method":"tools/call","params":{` + bc.call + `}}` + "\n")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := inW.Write(reqs[i%2]); err != nil {
					b.Fatal(err)
				}
				line := answer(strconv.Itoa(10 + i%2))
				if bytes.Contains(line, []byte(`"isError":true`)) != wantErr {
					b.Fatalf("%s: %.300s", bc.name, line)
				}
			}
		})
	}
}
