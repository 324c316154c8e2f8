package conformance

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
)

func protocolSpecs() []Spec {
	return []Spec{
		{
			ID: "protocol.tools-list-shape", Rules: []string{"TOOLS-1"},
			Title: "lists the fifteen tools, each with a description, a closed object input schema, an output schema and truthful annotations",
			Body: func(ctx context.Context, tc *TestContext) {
				s := tc.Connect(ctx)
				tools := listTools(ctx, s)
				names := map[string]*mcp.Tool{}
				for _, t := range tools {
					gomega.Expect(names).NotTo(gomega.HaveKey(t.Name), "tool %s listed twice", t.Name)
					names[t.Name] = t
				}
				gomega.Expect(tools).To(gomega.HaveLen(len(ContractTools())), "the server lists %d tools; the contract has %d and the server must list exactly those", len(tools), len(ContractTools()))
				for _, contract := range ContractTools() {
					t := names[tc.Config.toolName(contract)]
					gomega.Expect(t).NotTo(gomega.BeNil(), "tool %s is missing", contract)
					gomega.Expect(t.Description).NotTo(gomega.BeEmpty(), "%s: empty description", contract)
					in := schemaMap(t.InputSchema)
					gomega.Expect(in["type"]).To(gomega.Equal("object"), "%s: inputSchema type", contract)
					gomega.Expect(in["additionalProperties"]).To(gomega.Equal(false), "%s: inputSchema must set additionalProperties false", contract)
					gomega.Expect(t.OutputSchema).NotTo(gomega.BeNil(), "%s: no outputSchema", contract)
					gomega.Expect(t.Annotations).NotTo(gomega.BeNil(), "%s: no annotations", contract)
					// TOOLS-1: the annotations of the contract's tool table.
					row, _ := toolset.Lookup(contract)
					gomega.Expect(t.Annotations.ReadOnlyHint).To(gomega.Equal(row.ReadOnly), "%s: readOnlyHint", contract)
					if row.Destructive {
						// An absent destructiveHint defaults to true.
						gomega.Expect(t.Annotations.DestructiveHint == nil || *t.Annotations.DestructiveHint).To(gomega.BeTrue(),
							"%s: destructiveHint must be true", contract)
					}
				}
			},
		},
		{
			ID: "protocol.transports-identical", Rules: []string{"TOOLS-2"},
			Title:    "gives a byte-identical tools/list and the same result over stdio-style and Streamable HTTP transports",
			Optional: "needs two transports of one server: only the in-process reference target offers them, so it is skipped for a server command or URL",
			Body: func(ctx context.Context, tc *TestContext) {
				alt, ok := tc.run.target.(alternateTarget)
				if !ok {
					ginkgo.Skip("needs both transports of one server: only the in-process reference target offers them")
				}
				a := tc.Connect(ctx)
				conn, err := alt.connectAlternate(ctx, ProtocolVersion)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				b := &Session{tc: tc, conn: conn}
				tc.track(b)
				la, err := a.MCP().ListTools(ctx, nil)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				lb, err := b.MCP().ListTools(ctx, nil)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				ja, _ := json.Marshal(la.Tools)
				jb, _ := json.Marshal(lb.Tools)
				gomega.Expect(string(jb)).To(gomega.Equal(string(ja)), "tools/list differs between transports")
				ra := a.Call(ctx, "get_sandbox", map[string]any{})
				rb := b.Call(ctx, "get_sandbox", map[string]any{})
				gomega.Expect(rb.JSON).To(gomega.Equal(ra.JSON), "the same call gives different results")
			},
		},
		{
			ID: "protocol.session-versions", Rules: []string{"TOOLS-4"},
			Title: "answers every 2025 version with one that has sessions, and a client offering 2026-07-28 with that version or one with sessions",
			Body: func(ctx context.Context, tc *TestContext) {
				withSessions := []string{"2025-11-25", "2025-06-18", "2025-03-26"}
				for _, v := range withSessions {
					s, err := tc.ConnectVersion(ctx, v)
					gomega.Expect(err).NotTo(gomega.HaveOccurred(), "connect offering %s", v)
					// TOOLS-4 asks for a version with sessions, not an echo: a
					// server may answer an older one it prefers (the MCP
					// lifecycle lets it), and the client decides.
					got := s.MCP().InitializeResult().ProtocolVersion
					gomega.Expect(withSessions).To(gomega.ContainElement(got),
						"offered %s, the server answered %q, which is not a protocol version with sessions (%s)", v, got, strings.Join(withSessions, ", "))
				}
				// TOOLS-4: a server may serve 2026-07-28 beside 2025. A
				// client offering it gets either that sessionless version
				// (the server serves it) or one with sessions, never
				// another; protocol.initialize-offering-2026 checks that an
				// initialize offering it still gets a session.
				s, err := tc.ConnectVersion(ctx, ModernProtocolVersion)
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a client offering %s must be answered", ModernProtocolVersion)
				ir := s.MCP().InitializeResult()
				gomega.Expect(ir).NotTo(gomega.BeNil(), "no result for a client offering %s", ModernProtocolVersion)
				gomega.Expect(ir.ProtocolVersion == ModernProtocolVersion || slices.Contains(withSessions, ir.ProtocolVersion)).To(gomega.BeTrue(),
					"offered %s, the server answered %q, which is neither that version nor one with sessions (%s)",
					ModernProtocolVersion, ir.ProtocolVersion, strings.Join(withSessions, ", "))
			},
		},
	}
}

func listTools(ctx context.Context, s *Session) []*mcp.Tool {
	ginkgo.GinkgoHelper()
	var tools []*mcp.Tool
	for t, err := range s.MCP().Tools(ctx, nil) {
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list")
		tools = append(tools, t)
	}
	return tools
}

func schemaMap(s any) map[string]any {
	data, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
