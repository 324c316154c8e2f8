package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/sandbox"
)

// JSON-RPC 2.0 §5.1 error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// wireOptional is why the message-strictness specs are out of the
// required lists: the WIRE rules bind a server that declares a strict
// message policy; for any other the kit reports what it saw.
const wireOptional = "WIRE rules bind a server that declares a strict-message policy; for others the kit reports what it saw"

// badFrame is one message the WIRE rules refuse, and how it must be
// answered.
type badFrame struct {
	what  string
	frame string
	// codes are the JSON-RPC errors the refusal may carry.
	codes []int64
	// ids are the ids (JSON text) the refusal may be under.
	ids []string
	// echoOK: a result under exactly the id sent is also right (an id the
	// server can echo exactly).
	echoOK string
}

// wireCreate is a tools/call of create_sandbox under id: a frame whose
// effect the fake's journal shows if the server runs it.
func wireCreate(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`
}

func wireSpecs() []Spec {
	return []Spec{specWireNotJSON(), specWireNotARequest(), specWireBatch(), specWireIDs(), specWireDuplicateNames()}
}

func specWireNotJSON() Spec {
	parse := []int64{codeParseError}
	return Spec{
		ID: "protocol.wire-not-json", Rules: []string{"WIRE-1", "WIRE-2"}, Optional: wireOptional, NeedsFake: true,
		Title: "refuses a message that is not one JSON value (cut short, or followed by more data) with -32700, runs none of it, and answers the next request",
		Body: func(ctx context.Context, tc *TestContext) {
			checkBadFrames(ctx, tc, []badFrame{
				{what: "a message cut short", frame: `{"jsonrpc":"2.0","id":"n1","method":"ping"`, codes: parse, ids: []string{"null"}},
				{what: "a message followed by a second one", frame: wireCreate(`"n2"`) + wireCreate(`"n3"`), codes: parse, ids: []string{"null"}},
				{what: "a message followed by a stray word", frame: wireCreate(`"n4"`) + ` x`, codes: parse, ids: []string{"null"}},
			})
		},
	}
}

func specWireNotARequest() Spec {
	invalid := []int64{codeInvalidRequest}
	return Spec{
		ID: "protocol.wire-not-a-request", Rules: []string{"WIRE-1", "WIRE-3"}, Optional: wireOptional, NeedsFake: true,
		Title: `refuses JSON that is not a request object (a string, a number, null, no "jsonrpc":"2.0", a method that is not a string) with -32600, and answers the next request`,
		Body: func(ctx context.Context, tc *TestContext) {
			checkBadFrames(ctx, tc, []badFrame{
				{what: "a JSON string", frame: `"ping"`, codes: invalid, ids: []string{"null"}},
				{what: "a JSON number", frame: `42`, codes: invalid, ids: []string{"null"}},
				{what: "JSON null", frame: `null`, codes: invalid, ids: []string{"null"}},
				{what: `a request without "jsonrpc"`, frame: `{"id":"v1","method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`, codes: invalid, ids: []string{`"v1"`, "null"}},
				{what: `"jsonrpc":"1.0"`, frame: `{"jsonrpc":"1.0","id":"v2","method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`, codes: invalid, ids: []string{`"v2"`, "null"}},
				{what: `"jsonrpc" as the number 2.0`, frame: `{"jsonrpc":2.0,"id":"v3","method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}`, codes: invalid, ids: []string{`"v3"`, "null"}},
				{what: "a method that is a number", frame: `{"jsonrpc":"2.0","id":"v4","method":42}`, codes: invalid, ids: []string{`"v4"`, "null"}},
			})
		},
	}
}

func specWireBatch() Spec {
	return Spec{
		ID: "protocol.wire-batch", Rules: []string{"WIRE-1", "WIRE-4"}, Optional: wireOptional, NeedsFake: true,
		Title: "refuses a JSON-RPC batch at " + ProtocolVersion + " (batches were removed in 2025-06-18) with -32600 under id null, runs none of its members, and answers the next request",
		Body: func(ctx context.Context, tc *TestContext) {
			invalid := []int64{codeInvalidRequest}
			checkBadFrames(ctx, tc, []badFrame{
				{what: "a batch of one create_sandbox", frame: `[` + wireCreate(`"b1"`) + `]`, codes: invalid, ids: []string{"null"}},
				{what: "a batch of two", frame: `[` + wireCreate(`"b2"`) + `,{"jsonrpc":"2.0","id":"b3","method":"ping"}]`, codes: invalid, ids: []string{"null"}},
				{what: "an empty batch", frame: `[]`, codes: invalid, ids: []string{"null"}},
			})
		},
	}
}

func specWireIDs() Spec {
	return Spec{
		ID: "protocol.wire-ids", Rules: []string{"WIRE-1", "WIRE-5"}, Optional: wireOptional, NeedsFake: true,
		Title: "refuses a request whose id is null, a boolean, an object, fractional, in exponent form or too large to echo with -32600 under id null (never a rounded id), and answers the next request",
		Body: func(ctx context.Context, tc *TestContext) {
			invalid := []int64{codeInvalidRequest}
			null := []string{"null"}
			huge := "9007199254740993" // 2^53 + 1: a double rounds it to 2^53
			checkBadFrames(ctx, tc, []badFrame{
				{what: "a fractional id", frame: wireCreate(`1.5`), codes: invalid, ids: null},
				{what: "an id in exponent form", frame: wireCreate(`2e0`), codes: invalid, ids: null},
				{what: "an id past 2^53", frame: wireCreate(huge), codes: invalid, ids: null, echoOK: huge},
				{what: "a null id", frame: wireCreate(`null`), codes: invalid, ids: null},
				{what: "a boolean id", frame: wireCreate(`true`), codes: invalid, ids: null},
				{what: "an object id", frame: wireCreate(`{"n":1}`), codes: invalid, ids: null},
			})
		},
	}
}

func specWireDuplicateNames() Spec {
	return Spec{
		ID: "protocol.wire-duplicate-names", Rules: []string{"WIRE-1", "WIRE-6"}, Optional: wireOptional, NeedsFake: true,
		Title: "answers a message with a duplicate member name either with -32600/-32700 and nothing run, or with the result of exactly what it ran, and answers the next request",
		Body: func(ctx context.Context, tc *TestContext) {
			either := []int64{codeInvalidRequest, codeParseError}
			checkBadFrames(ctx, tc, []badFrame{
				{what: "a duplicate tool name", frame: `{"jsonrpc":"2.0","id":"d1","method":"tools/call","params":{"name":"list_sandboxes","arguments":{},"name":"create_sandbox"}}`,
					codes: either, ids: []string{`"d1"`, "null"}, echoOK: `"d1"`},
				{what: "a duplicate method", frame: `{"jsonrpc":"2.0","id":"d2","method":"ping","params":{"name":"create_sandbox","arguments":{}},"method":"tools/call"}`,
					codes: either, ids: []string{`"d2"`, "null"}, echoOK: `"d2"`},
				{what: "a duplicate id", frame: `{"jsonrpc":"2.0","id":"d3","method":"tools/call","params":{"name":"create_sandbox","arguments":{}},"id":"d4"}`,
					codes: either, ids: []string{`"d3"`, `"d4"`, "null"}},
			})
		},
	}
}

// checkBadFrames sends each frame, followed by a ping, on every frame
// connection the target offers, and checks the refusal, that the ping is
// still answered (WIRE-1), and that no frame ran unless its answer is the
// result of what ran.
func checkBadFrames(ctx context.Context, tc *TestContext, frames []badFrame) {
	ft, ok := tc.run.target.(frameTarget)
	if !ok {
		ginkgo.Skip(NotApplicablePrefix + ": needs raw messages, which the kit sends in-process, to a server command or to a server URL")
	}
	if tc.Config.declared().StrictMessages {
		sendBadFrames(ctx, tc, ft, frames, func(check func()) { check() })
		return
	}
	// The WIRE rules bind a server that declares a strict-message policy
	// (contract section 14); this one did not (--strict-messages), so the
	// first thing the kit saw go wrong is reported, not failed.
	sendBadFrames(ctx, tc, ft, frames, func(check func()) {
		if seen := gomega.InterceptGomegaFailures(check); len(seen) > 0 {
			ginkgo.Skip(NotApplicablePrefix + ": the server declares no strict-message policy (--strict-messages), and the WIRE rules bind only one that does; the kit saw: " + truncate(seen[0], 300))
		}
	})
}

// sendBadFrames sends each frame on every raw connection of the target
// and checks its answer, the next request's, and the fake's journal; each
// step's checks run inside guard.
func sendBadFrames(ctx context.Context, tc *TestContext, ft frameTarget, frames []badFrame, guard func(check func())) {
	var conns []namedFrameConn
	guard(func() {
		var err error
		conns, err = ft.frameConns(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "open the raw connections")
	})
	for _, nc := range conns {
		ginkgo.DeferCleanup(nc.conn.close)
	}
	for _, nc := range conns {
		guard(func() {
			gomega.Expect(initializeFrames(ctx, nc.conn)).To(gomega.Succeed(), "%s: open a session with raw messages", nc.transport)
		})
		for i, f := range frames {
			guard(func() {
				tc.Fake.Journal().Reset()
				ran := exchangeBadFrame(ctx, tc, nc, f, fmt.Sprintf(`"ok-%d"`, i))
				creates := tc.Fake.Journal().Count(sandbox.OpCreateSandbox)
				gomega.Expect(creates).To(gomega.Equal(ran),
					"%s: %s (%s) made %d create_sandbox call(s) at the provider, but its answer says %d ran (WIRE-1: nothing a refused message asks for is done)",
					nc.transport, f.what, truncate(f.frame, 120), creates, ran)
			})
		}
	}
}

// exchangeBadFrame sends f and then a ping under okID, reads until both
// are answered, checks the answer to f, and returns how many sandboxes
// that answer says were created (1 for a create_sandbox result, else 0).
func exchangeBadFrame(ctx context.Context, tc *TestContext, nc namedFrameConn, f badFrame, okID string) int {
	ginkgo.GinkgoHelper()
	rctx, cancel := context.WithTimeout(ctx, tc.allow(ctx, tc.Config.CallTimeout))
	defer cancel()
	where := fmt.Sprintf("%s: %s (%s)", nc.transport, f.what, truncate(f.frame, 120))
	gomega.Expect(nc.conn.send(rctx, []byte(f.frame))).To(gomega.Succeed(), "%s: send", where)
	gomega.Expect(nc.conn.send(rctx, []byte(`{"jsonrpc":"2.0","id":`+okID+`,"method":"ping"}`))).To(gomega.Succeed(),
		"%s: send a ping after it (WIRE-1: the server keeps serving)", where)
	var pinged bool
	var others []wireAnswer
	for !pinged || len(others) == 0 {
		a, err := nc.conn.next(rctx)
		if err != nil {
			if !pinged {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: the ping sent after it was never answered (WIRE-1: the server keeps serving)", where)
			} else {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: never answered (WIRE-1: a refused message gets a JSON-RPC error)", where)
			}
			return 0 // reached only where failures are intercepted
		}
		if a.idIs(okID) {
			gomega.Expect(a.Error).To(gomega.BeNil(), "%s: the ping after it got an error: %s", where, truncate(a.raw, 300))
			pinged = true
			continue
		}
		others = append(others, a)
	}
	gomega.Expect(others).To(gomega.HaveLen(1), "%s: answered more than once: %v", where, answersText(others))
	return checkRefusal(where, f, others[0])
}

// checkRefusal checks the one answer to a bad frame and returns how many
// sandboxes it says were created.
func checkRefusal(where string, f badFrame, a wireAnswer) int {
	ginkgo.GinkgoHelper()
	if a.Error == nil && f.echoOK != "" && a.idIs(f.echoOK) {
		// Run under exactly the id sent (WIRE-5, WIRE-6 allow it).
		if strings.Contains(string(a.Result), `"sandbox_id"`) && !strings.Contains(string(a.Result), `"sandboxes"`) {
			return 1
		}
		return 0
	}
	if !gomega.Expect(a.Error).NotTo(gomega.BeNil(), "%s: answered with a result, not refused: %s", where, truncate(a.raw, 300)) {
		return 0 // reached only where failures are intercepted
	}
	gomega.Expect(slices.Contains(f.codes, a.Error.Code)).To(gomega.BeTrue(),
		"%s: refused with %d, where the contract says %v: %s", where, a.Error.Code, f.codes, truncate(a.raw, 300))
	gomega.Expect(slices.ContainsFunc(f.ids, a.idIs)).To(gomega.BeTrue(),
		"%s: refused under id %s, where the contract says one of %v (never a rounded or guessed id): %s", where, string(a.ID), f.ids, truncate(a.raw, 300))
	return 0
}

func answersText(as []wireAnswer) string {
	texts := make([]string, len(as))
	for i, a := range as {
		texts[i] = truncate(a.raw, 200)
	}
	b, _ := json.Marshal(texts)
	return string(b)
}
