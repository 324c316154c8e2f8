package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// The per-principal cap and own-sandboxes-only specs hold a server URL to
// what its user declares (conform --sandboxes-per-principal,
// --own-sandboxes-only): against sandboxkit serve --http started with the
// options both pass (at a cap of 3, and at serve's default of 20 with a
// tokens file); against the same server started without them, while the
// user declares them, both fail on the defect.
func TestConformDeclaredPrincipalPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the sandboxkit binary")
	}
	dir := t.TempDir()
	bin := buildCommand(t, dir)
	tokens := filepath.Join(dir, "tokens")
	second := filepath.Join(dir, "second-token")
	writeFile(t, tokens, "alice alice-token-0123456789\nbob bob-token-0123456789\n")
	writeFile(t, second, "bob-token-0123456789\n")
	for _, c := range []struct {
		name    string
		serve   string
		declare string            // conform --sandboxes-per-principal
		want    map[string]string // spec instance: its state, or what its failure says
	}{
		{"server-keeps-them", "--sandboxes-per-principal 3 --own-sandboxes-only", "3", map[string]string{
			"cleanup.principal-sandbox-cap":         "passed",
			"handles.own-sandboxes-only@2026-07-28": "passed",
		}},
		// serve's default cap with a tokens file: the spec's leased
		// sandboxes must not outlive it.
		{"server-default-cap", "--own-sandboxes-only", "20", map[string]string{
			"cleanup.principal-sandbox-cap": "passed",
		}},
		{"server-without-them", "--sandboxes-per-principal 0", "3", map[string]string{
			"cleanup.principal-sandbox-cap":         "at its declared cap of 3 live sandboxes succeeded",
			"handles.own-sandboxes-only@2026-07-28": "of an external sandbox on a confined server succeeded",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := freeLoopbackAddr(t)
			report := filepath.Join(t.TempDir(), "report.json")
			cmd := exec.Command(bin, "conform", "--procs", "1",
				"--server-url", "http://"+addr+"/mcp",
				"--server-cmd", bin+" serve --http "+addr+" --tokens-file "+tokens+" "+c.serve,
				"--header", "Authorization: Bearer alice-token-0123456789", "--second-token-file", second,
				"--sandboxes-per-principal", c.declare, "--own-sandboxes-only",
				"--focus", "principal-sandbox-cap|own-sandboxes-only", "--json-report", report)
			cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
			out, _ := cmd.CombinedOutput() // the exit status is the specs' outcome, read from the report
			got := specOutcomes(t, report, out)
			for spec, want := range c.want {
				if !strings.Contains(got[spec], want) {
					t.Errorf("%s: %q, want %q\n%s", spec, got[spec], want, out)
				}
			}
		})
	}
}

// specOutcomes reads a Ginkgo JSON report: each spec that ran, by the
// label naming its instance, to "passed" or its failure message.
func specOutcomes(t *testing.T, path string, out []byte) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		t.Fatalf("report: %v", err)
	}
	got := map[string]string{}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.State == types.SpecStateSkipped || len(s.LeafNodeLabels) == 0 {
				continue
			}
			outcome := s.State.String()
			if s.State != types.SpecStatePassed {
				outcome += ": " + s.Failure.Message
			}
			got[s.LeafNodeLabels[0]] = outcome
		}
	}
	return got
}

// freeLoopbackAddr returns a loopback address with a port free a moment
// ago, for a server the kit starts and then reaches by URL.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
