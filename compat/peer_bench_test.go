package compat_test

// Side-by-side benchmarks, in one run, on loopback, against one fake
// provider: our server (`sandboxkit serve --http`), the TypeScript peer
// (peer/server.mjs: the MCP TS SDK over the e2b JS SDK) and the floor (a
// go-sdk server whose tools return constants, newFloor). The go-sdk client
// drives each over Streamable HTTP. CPU is each server process's own
// (/proc/<pid>/stat utime+stime), so the client and the fake, which run in
// this process, are not counted. See docs/benchmarks.md for the figures:
//
//	go test ./compat -run '^$' -bench 'BenchmarkPeer' -benchtime 3s

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var oursReady = regexp.MustCompile(`msg="serving MCP over Streamable HTTP" addr=(\S+)`)
var floorReady = regexp.MustCompile(`^floor listening on (http://\S+/mcp)$`)

// startAll starts the fake and the three servers against it, in the order
// the figures list them.
func startAll(b *testing.B) []*server {
	node := needNode(b)
	bin := buildSandboxkit(b)
	_, env := startFake(b)

	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	ours := startServer(b, "ours", cmd, oursReady)
	ours.url = "http://" + ours.url + "/mcp"

	peer := startPeer(b, node, env)

	floorCmd := exec.Command(os.Args[0], "-test.run=^$")
	floorCmd.Env = append(os.Environ(), floorEnv+"=127.0.0.1:0")
	floor := startServer(b, "floor", floorCmd, floorReady)
	return []*server{ours, peer, floor}
}

// cell is one measured figure set of one server.
type cell struct {
	perSec    float64       // calls (or transfers) per second
	cpu       time.Duration // server CPU per call
	wall      time.Duration // wall time per call
	peakBytes int64         // server peak RSS during the measured transfers
	idleBytes int64         // server RSS before the first transfer of its session
}

// table collects the last (largest b.N) cell of each row and server, and
// logs the ratios ours/peer and ours/floor when the benchmark ends.
type table struct {
	mu   sync.Mutex
	rows map[string]map[string]cell
}

func (t *table) put(row, srv string, c cell) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rows == nil {
		t.rows = map[string]map[string]cell{}
	}
	if t.rows[row] == nil {
		t.rows[row] = map[string]cell{}
	}
	t.rows[row][srv] = c
}

func (t *table) log(b *testing.B, transfers bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.rows))
	for k := range t.rows {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, row := range names {
		r := t.rows[row]
		o, p, f := r["ours"], r["peer"], r["floor"]
		if transfers {
			fmt.Fprintf(&sb, "%-28s wall ms ours %.1f peer %.1f floor %.1f | cpu ms ours %.1f peer %.1f floor %.1f | peak (idle) RSS MiB ours %.0f (%.0f) peer %.0f (%.0f) floor %.0f (%.0f) | wall peer/ours %.2fx ours/floor %.2fx | cpu peer/ours %.2fx\n",
				row, ms(o.wall), ms(p.wall), ms(f.wall), ms(o.cpu), ms(p.cpu), ms(f.cpu),
				mib(o.peakBytes), mib(o.idleBytes), mib(p.peakBytes), mib(p.idleBytes), mib(f.peakBytes), mib(f.idleBytes),
				ratio(ms(p.wall), ms(o.wall)), ratio(ms(o.wall), ms(f.wall)), ratio(ms(p.cpu), ms(o.cpu)))
			continue
		}
		fmt.Fprintf(&sb, "%-28s calls/s ours %.0f peer %.0f floor %.0f | cpu µs/call ours %.0f peer %.0f floor %.0f | calls/s ours/peer %.2fx ours/floor %.2fx | cpu/call peer/ours %.2fx ours/floor %.2fx\n",
			row, o.perSec, p.perSec, f.perSec, us(o.cpu), us(p.cpu), us(f.cpu),
			ratio(o.perSec, p.perSec), ratio(o.perSec, f.perSec), ratio(us(p.cpu), us(o.cpu)), ratio(us(o.cpu), us(f.cpu)))
	}
	// Printed, not logged: a parent benchmark's log shows only under -v.
	fmt.Printf("side by side (one run, one fake):\n%s", sb.String())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func mib(n int64) float64        { return float64(n) / (1 << 20) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// openSessions opens n sessions on srv, each with its default sandbox.
func openSessions(b *testing.B, srv *server, n int) []*mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make([]*mcp.ClientSession, n)
	for i := range out {
		out[i] = connect(b, srv.url)
		if _, err := call(ctx, out[i], "create_sandbox", map[string]any{}); err != nil {
			b.Fatalf("%s: %v", srv.name, err)
		}
	}
	return out
}

func closeSessions(sessions []*mcp.ClientSession) {
	for _, cs := range sessions {
		_ = cs.Close()
	}
}

// BenchmarkPeerCalls measures calls/s and server CPU per call of
// get_sandbox and run_command at 1, 4 and 8 concurrent sessions, each
// session making one call at a time.
func BenchmarkPeerCalls(b *testing.B) {
	servers := startAll(b)
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"get_sandbox", map[string]any{}},
		{"run_command", map[string]any{"command": "echo hi"}},
	}
	var tab table
	for _, c := range calls {
		for _, n := range []int{1, 4, 8} {
			for _, srv := range servers {
				row := fmt.Sprintf("%s/sessions=%d", c.tool, n)
				b.Run(row+"/"+srv.name, func(b *testing.B) {
					tab.put(row, srv.name, measureCalls(b, srv, n, c.tool, c.args))
				})
			}
		}
	}
	tab.log(b, false)
}

func measureCalls(b *testing.B, srv *server, n int, tool string, args map[string]any) cell {
	sessions := openSessions(b, srv, n)
	defer closeSessions(sessions)
	ctx := context.Background()
	cpu0, err := procCPU(srv.pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, cs := range sessions {
		share := b.N / n
		if i < b.N%n {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range share {
				if _, err := call(ctx, cs, tool, args); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu1, err := procCPU(srv.pid)
	if err != nil {
		b.Fatal(err)
	}
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("%s: %v", srv.name, err)
	}
	c := cell{perSec: float64(b.N) / elapsed.Seconds(), cpu: (cpu1 - cpu0) / time.Duration(b.N), wall: elapsed / time.Duration(b.N)}
	b.ReportMetric(c.perSec, "calls/s")
	b.ReportMetric(us(c.cpu), "cpu-µs/call")
	return c
}

// BenchmarkPeerTransfer measures one session's 8 MiB upload_file and
// download_file: wall time and server CPU per transfer, and the server's
// peak RSS above its RSS before the run.
func BenchmarkPeerTransfer(b *testing.B) {
	servers := startAll(b)
	payload := make([]byte, transferSize)
	for i := range payload {
		payload[i] = byte(i*31 + i>>11)
	}
	encoded := base64.StdEncoding.EncodeToString(payload)
	var tab table
	for _, tool := range []string{"upload_file", "download_file"} {
		for _, srv := range servers {
			row := tool + "/8MiB"
			b.Run(row+"/"+srv.name, func(b *testing.B) {
				tab.put(row, srv.name, measureTransfer(b, srv, tool, encoded, payload))
			})
		}
	}
	tab.log(b, true)
}

func measureTransfer(b *testing.B, srv *server, tool, encoded string, payload []byte) cell {
	sessions := openSessions(b, srv, 1)
	defer closeSessions(sessions)
	cs, ctx := sessions[0], context.Background()
	idle, err := procMem(srv.pid, "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	const path = "/tmp/bench.bin"
	up := map[string]any{"path": path, "data_base64": encoded}
	if _, err := call(ctx, cs, "upload_file", up); err != nil {
		b.Fatalf("%s: %v", srv.name, err)
	}
	args := up
	if tool == "download_file" {
		args = map[string]any{"path": path}
	}
	err = resetPeakRSS(srv.pid) // the peak of the measured transfers, not of the setup upload
	cpu0, err2 := procCPU(srv.pid)
	if err != nil || err2 != nil {
		b.Fatalf("%s: /proc: %v %v", srv.name, err, err2)
	}
	b.SetBytes(transferSize)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		out, err := call(ctx, cs, tool, args)
		if err != nil {
			b.Fatalf("%s: %v", srv.name, err)
		}
		checkTransferOut(b, srv, tool, out, payload)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu1, err := procCPU(srv.pid)
	peak, err2 := procMem(srv.pid, "VmHWM")
	if err != nil || err2 != nil {
		b.Fatalf("%s: /proc: %v %v", srv.name, err, err2)
	}
	c := cell{perSec: float64(b.N) / elapsed.Seconds(), cpu: (cpu1 - cpu0) / time.Duration(b.N), wall: elapsed / time.Duration(b.N), peakBytes: peak, idleBytes: idle}
	b.ReportMetric(us(c.cpu)/1000, "cpu-ms/op")
	b.ReportMetric(mib(peak), "peak-RSS-MiB")
	b.ReportMetric(mib(idle), "idle-RSS-MiB")
	return c
}

// checkTransferOut keeps a benchmark honest: a server that answered without
// moving the bytes would look fast. The floor's constant download is of
// another payload, so only its size is checked.
func checkTransferOut(b *testing.B, srv *server, tool string, out map[string]any, payload []byte) {
	if out["size"] != float64(len(payload)) {
		b.Fatalf("%s %s: size %v, want %d", srv.name, tool, out["size"], len(payload))
	}
	if tool != "download_file" || srv.name == "floor" {
		return
	}
	data, err := base64.StdEncoding.DecodeString(fmt.Sprint(out["data_base64"]))
	if err != nil || !bytes.Equal(data, payload) {
		b.Fatalf("%s download_file: the bytes did not round-trip", srv.name)
	}
}
