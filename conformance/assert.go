package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// Categories is the fixed set of error categories (ERR-2).
var errorCategories = []string{"invalid_argument", "not_found", "unauthenticated", "permission_denied", "conflict",
	"rate_limited", "timeout", "unavailable", "provider_error", "internal"}

// ExpectSuccess asserts a successful result (TOOLS-3): no protocol error,
// isError false, structuredContent valid against the tool's outputSchema
// as the official clients validate it (TOOLS-5), and one text block holding
// the same JSON.
func (tc *TestContext) ExpectSuccess(r *Result) *Result {
	ginkgo.GinkgoHelper()
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "%s: protocol error", r.Tool)
	gomega.Expect(r.IsError).To(gomega.BeFalse(), "%s: unexpected tool error: %s", r.Tool, truncate(r.Text, 300))
	if r.fromText {
		// TOOLS-3 is reported once for the run (a finding, baseline.go),
		// not in every spec that reads a result: the values came from the
		// text block. Certification (RequireAll) is the full contract: the
		// spec fails.
		if !tc.Config.RequireAll {
			tc.finding("TOOLS-3", r.Tool)
			return r
		}
		tc.fail(fmt.Sprintf("%s: result has no structuredContent object (TOOLS-3)", r.Tool))
	}
	gomega.Expect(r.Structured).NotTo(gomega.BeNil(), "%s: result has no structuredContent object", r.Tool)
	gomega.Expect(r.TextBlocks).To(gomega.BeNumerically(">=", 1), "%s: result has no text block", r.Tool)
	var fromText any
	gomega.Expect(json.Unmarshal([]byte(r.Text), &fromText)).To(gomega.Succeed(), "%s: text block is not the JSON of structuredContent", r.Tool)
	// Compared as they arrived: a tool map may have renamed Structured's
	// members to the contract's.
	gomega.Expect(fromText).To(gomega.Equal(textExpected(r, fromText)), "%s: text block differs from structuredContent", r.Tool)
	if t := tc.Advertised(r.Tool); t == nil || t.OutputSchema == nil {
		tc.fail(fmt.Sprintf("%s: the tool has no outputSchema", r.Tool))
	}
	gomega.Expect(r.ClientViolation).To(gomega.BeEmpty(), "%s", tc.forReport("TOOLS-5: "+r.ClientViolation))
	return r
}

// ExpectToolError asserts a tool error (ERR-1, ERR-2) of the given category
// with a static recovery hint: isError, no structuredContent, and a text
// block holding {"error": {...}}; it returns the error object.
func (tc *TestContext) ExpectToolError(r *Result, category string) map[string]any {
	ginkgo.GinkgoHelper()
	gomega.Expect(r.Err).NotTo(gomega.HaveOccurred(), "%s: want a tool error, got a protocol error", r.Tool)
	gomega.Expect(r.IsError).To(gomega.BeTrue(), "%s: want isError true, got a success: %s", r.Tool, truncate(r.Text, 300))
	gomega.Expect(r.ClientViolation).To(gomega.BeEmpty(), "%s", tc.forReport("TOOLS-5: "+r.ClientViolation))
	gomega.Expect(r.structured).To(gomega.BeNil(), "%s", tc.forReport(fmt.Sprintf(
		"%s: a tool error carries structuredContent %s; ERR-2 puts the error object in the text block only", r.Tool, truncate(string(r.structured), 300))))
	e := r.ErrorObject()
	gomega.Expect(e).NotTo(gomega.BeNil(), `%s: tool error whose text block is not {"error": {...}}: %s`, r.Tool, truncate(r.Text, 300))
	gomega.Expect(errorCategories).To(gomega.ContainElement(e["category"]), "%s: category %v is not one of the fixed set", r.Tool, e["category"])
	if category != "" {
		gomega.Expect(e["category"]).To(gomega.Equal(category), "%s: error category", r.Tool)
	}
	rec, _ := e["recovery"].(string)
	gomega.Expect(rec).NotTo(gomega.BeEmpty(), "%s: tool error without a recovery hint", r.Tool)
	for k := range e {
		gomega.Expect([]string{"category", "http_status", "code", "field", "recovery"}).To(gomega.ContainElement(k),
			"%s: error object has a member %q outside ERR-2", r.Tool, k)
	}
	return e
}

// ExpectInvalidField asserts a validation error naming field (VAL-6) whose
// whole result holds no part of the submitted value.
func (tc *TestContext) ExpectInvalidField(r *Result, field string, submitted ...string) {
	ginkgo.GinkgoHelper()
	tc.ExpectToolError(r, "invalid_argument")
	gomega.Expect(r.Field()).To(gomega.Equal(field), "%s: the error must name the invalid field", r.Tool)
	for _, v := range submitted {
		if v == "" {
			continue
		}
		gomega.Expect(r.JSON).NotTo(gomega.ContainSubstring(v), "%s: the result echoes the submitted value", r.Tool)
	}
}

// ExpectNoLeak asserts that no canary secret of the fake (API key, access
// tokens, domains, client IDs, user metadata, environment variables, error
// messages) appears in the texts. In cloud mode it looks for every secret
// the run has seen instead: the API key, configured header values, and the
// access tokens, sandbox domains and client IDs the platform sent to the
// kit's SDK (and, in-process, to the reference server); a failure names the
// kind of secret, never its value.
func (tc *TestContext) ExpectNoLeak(what string, texts ...string) {
	ginkgo.GinkgoHelper()
	for _, t := range texts {
		if tc.Fake != nil {
			if c, ok := tc.Fake.FindCanary(t); ok {
				ginkgo.Fail(fmt.Sprintf("%s leaks a secret (canary %q)", what, c))
			}
		} else if c := tc.run.cloud; c != nil {
			if kind, ok := c.secrets.find(t); ok {
				ginkgo.Fail(fmt.Sprintf("%s leaks a secret (the %s)", what, kind))
			}
		}
		for _, bad := range []string{"goroutine ", "panic:", ".go:"} {
			if strings.Contains(t, bad) {
				ginkgo.Fail(fmt.Sprintf("%s holds a stack trace (%q)", what, bad))
			}
		}
	}
}

// ExpectNoRequests asserts the fake received no request at all (VAL-7).
// It needs the fake: only NeedsFake specs may use it.
func (tc *TestContext) ExpectNoRequests(why string) {
	ginkgo.GinkgoHelper()
	if tc.Fake == nil {
		ginkgo.Fail("ExpectNoRequests needs the fake provider's journal: mark the spec NeedsFake")
	}
	gomega.Expect(tc.Fake.Journal().Ops()).To(gomega.BeEmpty(), "%s: the server called the provider", why)
}

// toAny round-trips a value through JSON so numbers compare as float64.
func toAny(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// fail fails the spec with msg, made fit for reports first.
func (tc *TestContext) fail(msg string) {
	ginkgo.GinkgoHelper()
	ginkgo.Fail(tc.forReport(msg))
}

// forReport returns s fit for the console and Ginkgo's reports: in a cloud
// run, whose reports may be shared, redacted of every secret the run has
// seen, as its bundle is.
func (tc *TestContext) forReport(s string) string {
	if tc.run != nil && tc.run.cloud != nil {
		return tc.run.redact(s)
	}
	return s
}

// argsText writes a call's arguments as the JSON the kit sent, for a
// failure message (a Go map would print as map[k:v]).
func argsText(args any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprint(args)
	}
	return string(b)
}

// jsonText writes a value a server sent as JSON, for a failure message:
// the words an author reads in their own output, not a Go value dump.
func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(data)
}

// textExpected is what a success's text block must hold (TOOLS-3): the
// JSON of structuredContent, as it arrived; for an inline download_file
// whose text leaves out the member holding data_base64, that JSON without
// it (the bytes travel once).
func textExpected(r *Result, fromText any) any {
	structured := toAny(r.structured)
	text, ok := fromText.(map[string]any)
	m, isMap := structured.(map[string]any)
	if r.Tool != "download_file" || !ok || !isMap {
		return structured
	}
	data := r.String("data_base64")
	var missing []string
	for k := range m {
		if _, inText := text[k]; !inText {
			missing = append(missing, k)
		}
	}
	if len(missing) != 1 {
		return structured
	}
	if v, ok := m[missing[0]].(string); !ok || v != data {
		return structured
	}
	short := maps.Clone(m)
	delete(short, missing[0])
	return short
}
