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
	cs := connectThroughProxy(ctx, t, c, client, server.ModernProtocolVersion)
	if id := cs.ID(); id != "" {
		t.Errorf("a modern client got session ID %q", id)
	}

	const sandboxes, policy = 6, 120
	ids := createSandboxesAcrossReplicas(ctx, t, cs, sandboxes, policy)
	checkBackgroundCommandAcrossReplicas(ctx, t, cs, ids[0])
	checkRoundRobinSpread(t, c)
	killReplica0UnderLoad(ctx, t, c, cs, ids)
	checkSandboxesAfterKill(ctx, t, c, cs, ids, policy)
	checkKillSandboxLeavesRest(ctx, t, c, cs, ids)
}

// createSandboxesAcrossReplicas creates n sandboxes with the lease policy
// (in seconds), writes a file in each, and checks that the file reads back
// twice: state written through one replica is read through the other. It
// returns the sandbox IDs.
func createSandboxesAcrossReplicas(ctx context.Context, t *testing.T, cs *mcp.ClientSession, n, policy int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for range n {
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
	return ids
}

// checkBackgroundCommandAcrossReplicas checks that a background command
// started through one replica is read and killed through either
// (HANDLE-2): its output lives in the sandbox. Four reads each see its
// stdout or nothing yet, and the kill succeeds.
func checkBackgroundCommandAcrossReplicas(ctx context.Context, t *testing.T, cs *mcp.ClientSession, id string) {
	t.Helper()
	cmd, err := call(ctx, cs, "start_background_command", map[string]any{"sandbox_id": id, "command": "echo out; echo err >&2; sleep 600"})
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
}

// checkRoundRobinSpread checks from the replicas' logs that round robin
// spread the calls: each replica served at least one get_background_command
// and one read_file.
func checkRoundRobinSpread(t *testing.T, c *cluster) {
	t.Helper()
	for i, r := range c.replicas {
		if n := strings.Count(r.out.String(), "tool=get_background_command"); n == 0 {
			t.Fatalf("replica-%d served no get_background_command: round robin did not spread the calls", i)
		}
		if n := strings.Count(r.out.String(), "tool=read_file"); n == 0 {
			t.Fatalf("replica-%d served no read_file: round robin did not spread the calls", i)
		}
	}
}

// killReplica0UnderLoad keeps run_command calls going on every sandbox
// while replica-0 dies by SIGKILL, stops them a second after the kill, and
// logs how many failed (those in flight on the dead replica). It checks
// nothing: the phases after it check what the kill left.
func killReplica0UnderLoad(ctx context.Context, t *testing.T, c *cluster, cs *mcp.ClientSession, ids []string) {
	t.Helper()
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
}

// checkSandboxesAfterKill checks that after the kill every sandbox still
// runs, keeps its state and its lease policy, and serves every call (the
// proxy sends them to the survivor); that its end is renewed but never
// beyond now + policy (LEASE-2); and that no sandbox carries a replica's
// instance tag, which a sweep would end before its lease.
func checkSandboxesAfterKill(ctx context.Context, t *testing.T, c *cluster, cs *mcp.ClientSession, ids []string, policy int) {
	t.Helper()
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
		if limit := time.Now().Add(time.Duration(policy+1) * time.Second); info.EndAt == nil || info.EndAt.After(limit) {
			t.Errorf("sandbox %s ends at %v, beyond now + policy (%v)", id, info.EndAt, limit)
		}
	}
	for i := range c.replicas {
		if n := len(c.owned(ctx, fmt.Sprintf("replica-%d", i))); n != 0 {
			t.Errorf("%d leased sandboxes carry replica-%d's instance tag: a sweep would end them before their lease", n, i)
		}
	}
}

// checkKillSandboxLeavesRest ends the first half of the sandboxes with
// kill_sandbox (the rest end by their lease, which checkSandboxesAfterKill
// bounds) and checks that exactly the other half is left on the platform.
func checkKillSandboxLeavesRest(ctx context.Context, t *testing.T, c *cluster, cs *mcp.ClientSession, ids []string) {
	t.Helper()
	sandboxes := len(ids)
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
