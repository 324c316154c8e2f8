package conformance

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/sandboxkit/sandboxkit/conformance/internal/summary"
	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/internal/fakecodeinterp"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// Diagnoses name a failure's first cause in words, where the kit can see
// it, so that the summary reports it once with the specs it affected
// rather than as each spec's rule.

// causeNotReached is the cause of a failed spec whose tool calls failed
// while the fake saw no request at all.
const causeNotReached = "the fake saw no request from the server: its tool calls failed without reaching the fake provider. " +
	"The kit points the server at the fake with E2B_API_URL, E2B_SANDBOX_URL, E2B_DOMAIN and E2B_API_KEY; " +
	"an SDK that reads no E2B_API_URL cannot reach it (e2b 1.x, as in @e2b/code-interpreter 1.x, reads only E2B_DOMAIN " +
	"and calls https://api.<E2B_DOMAIN>). Run again with --e2b1 preload (a Node server: a preload redirects its fetch to the fake) " +
	"or --e2b1 debug (the fake where e2b 1.x looks with E2B_DEBUG=true; one sandbox at a time), " +
	"move the server to e2b 2.x, which reads E2B_API_URL, or certify it in cloud mode (--cloud)"

// unreachable are the words of a failure to reach a host, as Node's fetch
// ("fetch failed", ECONNREFUSED, ENOTFOUND, getaddrinfo) and Go's net
// package ("connection refused", "no such host", "dial tcp") put them.
var unreachable = regexp.MustCompile(`(?i)fetch failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|getaddrinfo|connection refused|no such host|dial tcp|network is unreachable`)

// noteCall counts a call that failed the way a call fails that could not
// reach its provider: an ERR-2 category of unavailable or timeout, or the
// words of a connection failure. Argument errors do not count: they fail
// before any provider call by design.
func (tc *TestContext) noteCall(r *Result) {
	if r.Err == nil && !r.IsError {
		return
	}
	cat, _ := r.errObject["category"].(string)
	if cat != "unavailable" && cat != "timeout" && !unreachable.MatchString(r.Text) && (r.Err == nil || !unreachable.MatchString(r.Err.Error())) {
		return
	}
	tc.mu.Lock()
	tc.failedCalls++
	tc.mu.Unlock()
}

// diagnose states the first cause of a failed spec, when the kit can see
// one: a non-JSON line on a stdio server's stdout (a cause, the server's
// defect), or calls the fake cannot judge: tool calls that failed without
// any request reaching the fake, or requests to a sandbox port the fake
// does not serve (the spec is then inconclusive, see outcome.go).
func (tc *TestContext) diagnose() {
	if !ginkgo.CurrentSpecReport().Failed() {
		return
	}
	if st, ok := tc.target.(*stdioTarget); ok {
		if line := st.nonJSON(); line != "" {
			ginkgo.AddReportEntry(causeEntry, nonJSONText(line), ginkgo.ReportEntryVisibilityNever)
			return
		}
	}
	tc.mu.Lock()
	failed := tc.failedCalls
	tc.mu.Unlock()
	if tc.Fake == nil {
		return
	}
	if failed > 0 && tc.Fake.Journal().Len() == 0 {
		tc.inconclusive(inconclusiveNotTestable, causeNotReached)
		return
	}
	if port := otherSandboxPort(tc.Fake.Journal().Entries()); port != "" {
		tc.inconclusive(inconclusiveNotTestable, otherPortText(port))
	}
}

// otherSandboxPort returns the first sandbox port the fake does not serve
// that a request in entries was addressed to, or "". The fake serves the
// daemon's port (49983) and the code interpreter's (49999, what
// @e2b/code-interpreter's runCode posts /execute to).
func otherSandboxPort(entries []fakeprovider.Entry) string {
	served := map[string]bool{strconv.Itoa(sandbox.EnvdPort): true, strconv.Itoa(fakecodeinterp.Port): true}
	for _, e := range entries {
		if !e.Envd {
			continue
		}
		port := e.Header.Get(envdapi.SandboxPortHeader)
		if port == "" {
			// Only a sandbox host names a port: <port>-<sandbox>.<domain>.
			// A loopback address (a signed transfer URL's plain GET to
			// 127.0.0.1) names none.
			label, _, _ := strings.Cut(e.Host, ".")
			if p, id, ok := strings.Cut(label, "-"); ok && id != "" {
				port = p
			}
		}
		if port != "" && !served[port] && strings.Trim(port, "0123456789") == "" {
			return port
		}
	}
	return ""
}

// otherPortText says why calls to a sandbox port the fake does not serve
// cannot be judged against it.
func otherPortText(port string) string {
	return fmt.Sprintf("the server called port %s of a sandbox, a service inside the sandbox, which the fake does not serve "+
		"(it answers 502 \"port is not open\", as the platform does for a closed port); only the daemon's port %d and the code interpreter's %d are served. "+
		"Certify such calls in cloud mode (--cloud), or map the tool to one that runs code through commands", port, sandbox.EnvdPort, fakecodeinterp.Port)
}

// noteEnding counts how a session's server process ended.
func (tc *TestContext) noteEnding(how string) {
	if how == "" {
		return
	}
	tc.mu.Lock()
	if tc.endings == nil {
		tc.endings = map[string]int{}
	}
	tc.endings[how]++
	tc.mu.Unlock()
}

// endingsEntry is the report entry that counts, for one spec, how its
// sessions' server processes ended: "exited on EOF=3;needed SIGTERM=1".
const endingsEntry = summary.EntryEndings

// reportEndings records the spec's process endings in its report, where
// the summary (merged across processes) adds them up.
func (tc *TestContext) reportEndings() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.endings) == 0 {
		return
	}
	var parts []string
	for _, how := range []string{endedOnEOF, endedOnSIGTERM, endedKilled, endedEarly} {
		if n := tc.endings[how]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", how, n))
		}
	}
	ginkgo.AddReportEntry(endingsEntry, strings.Join(parts, ";"), ginkgo.ReportEntryVisibilityNever)
}
