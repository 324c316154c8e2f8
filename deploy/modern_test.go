package deploy_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/server"
)

// TestModernRoundRobinReplicaKilled drives 2026-07-28 requests through plain
// round-robin HAProxy (deploy/haproxy-modern.cfg: no stick table) to two
// replicas: sandboxes created through one replica are used through both,
// renewed by the lease in their metadata (LEASE-2, LEASE-4). One replica is
// killed with SIGKILL while calls run: no sandbox loses its lease or its
// state, every later call succeeds through the survivor, and nothing is
// left beyond the leases: each sandbox ends by kill_sandbox or its lease,
// and none carries an instance tag that a sweep would act on.
func TestModernRoundRobinReplicaKilled(t *testing.T) {
	haproxy := needHAProxy(t)
	c := startClusterWith(t, haproxy, "haproxy-modern.cfg")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "deploy-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + c.lb + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: server.ModernProtocolVersion})
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if id := cs.ID(); id != "" {
		t.Errorf("a modern client got session ID %q", id)
	}

	const sandboxes, policy = 6, 120
	ids := make([]string, 0, sandboxes)
	for range sandboxes {
		got, err := call(ctx, cs, "create_sandbox", map[string]any{"timeout": policy})
		if err != nil {
			t.Fatal(err)
		}
		id := got["sandbox_id"].(string)
		ids = append(ids, id)
		// State written through one replica is read through the other.
		if _, err := call(ctx, cs, "write_file", map[string]any{"sandbox_id": id, "path": "/tmp/who", "content": id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		for range 2 {
			got, err := call(ctx, cs, "read_file", map[string]any{"sandbox_id": id, "path": "/tmp/who"})
			if err != nil || got["content"] != id {
				t.Fatalf("read_file on %s: %v %v", id, got, err)
			}
		}
	}
	// A background command started through one replica is read and
	// killed through either (HANDLE-2): its output lives in the sandbox.
	cmd, err := call(ctx, cs, "start_background_command", map[string]any{"sandbox_id": ids[0], "command": "echo out; echo err >&2; sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	cmdID := cmd["command_id"].(string)
	for range 4 {
		got, err := call(ctx, cs, "get_background_command", map[string]any{"command_id": cmdID})
		if err != nil {
			t.Fatalf("get_background_command through the proxy: %v", err)
		}
		if got["stdout"] != "out\n" && got["stdout"] != "" {
			t.Errorf("stdout %q", got["stdout"])
		}
	}
	if _, err := call(ctx, cs, "kill_background_command", map[string]any{"command_id": cmdID, "signal": "SIGKILL"}); err != nil {
		t.Fatal(err)
	}
	for i, r := range c.replicas {
		if n := strings.Count(r.out.String(), "tool=get_background_command"); n == 0 {
			t.Fatalf("replica-%d served no get_background_command: round robin did not spread the calls", i)
		}
		if n := strings.Count(r.out.String(), "tool=read_file"); n == 0 {
			t.Fatalf("replica-%d served no read_file: round robin did not spread the calls", i)
		}
	}

	// Calls keep running while replica-0 dies.
	var wg sync.WaitGroup
	failures := make(chan error, 64)
	stop := make(chan struct{})
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := call(ctx, cs, "run_command", map[string]any{"sandbox_id": id, "command": "echo hi"}); err != nil {
					select {
					case failures <- err:
					default:
					}
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	c.replicas[0].kill()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	close(failures)
	lost := 0
	for range failures {
		lost++
	}
	t.Logf("calls that failed around the SIGKILL (in flight on the dead replica): %d", lost)

	// After the kill: every sandbox still runs, keeps its state and lease,
	// and serves every call (the proxy sends them to the survivor).
	for _, id := range ids {
		got, err := call(ctx, cs, "read_file", map[string]any{"sandbox_id": id, "path": "/tmp/who"})
		if err != nil || got["content"] != id {
			t.Fatalf("after SIGKILL, read_file on %s: %v %v", id, got, err)
		}
		info, md, err := c.platform.GetInfoAndMetadataByID(ctx, id, nil)
		if err != nil {
			t.Fatalf("after SIGKILL, sandbox %s: %v", id, err)
		}
		if md[server.LeaseTagKey] != strconv.Itoa(policy) {
			t.Errorf("sandbox %s: lease %q, want %d", id, md[server.LeaseTagKey], policy)
		}
		// LEASE-2: renewed, never beyond now + policy (whole seconds).
		if limit := time.Now().Add((policy + 1) * time.Second); info.EndAt == nil || info.EndAt.After(limit) {
			t.Errorf("sandbox %s ends at %v, beyond now + policy (%v)", id, info.EndAt, limit)
		}
	}
	for i := range c.replicas {
		if n := len(c.owned(ctx, fmt.Sprintf("replica-%d", i))); n != 0 {
			t.Errorf("%d leased sandboxes carry replica-%d's instance tag: a sweep would end them before their lease", n, i)
		}
	}
	// kill_sandbox ends them (half of them; the rest end by their lease,
	// which the check above bounds); nothing else is left.
	for _, id := range ids[:sandboxes/2] {
		if _, err := call(ctx, cs, "kill_sandbox", map[string]any{"sandbox_id": id}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.platform.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != sandboxes-sandboxes/2 {
		t.Errorf("%d sandboxes live after killing %d of %d, want %d", len(all), sandboxes/2, sandboxes, sandboxes-sandboxes/2)
	}
}
