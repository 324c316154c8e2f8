package summary

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/sandboxkit/sandboxkit/server"
)

// failureGroup is failures that share a first cause.
type failureGroup struct {
	cause string
	rules []string
	specs []string
	// details holds one line per spec where each spec's message says more
	// than the cause (the leak check's IDs).
	details []string
	// args are the refused arguments of a refusal group (see firstCause).
	args []string
	// tools counts, for a group of problem lines, the contract tool each
	// member's line names first (its call), in order of first sight.
	tools     map[string]int
	toolOrder []string
}

// callTool returns the contract tool a problem line's call names
// ("kill_sandbox(owned): ..."), for a group of plain problem lines, or "".
func (c *causeReader) callTool(key, cause string) string {
	if !strings.HasPrefix(key, "msg:") {
		return ""
	}
	call, _, ok := strings.Cut(cause, ": ")
	if !ok {
		return ""
	}
	return c.toolWord.FindString(call)
}

// noteTool counts a member's tool.
func (g *failureGroup) noteTool(tool string) {
	if tool == "" {
		return
	}
	if g.tools == nil {
		g.tools = map[string]int{}
	}
	if g.tools[tool] == 0 {
		g.toolOrder = append(g.toolOrder, tool)
	}
	g.tools[tool]++
}

// heading is the group's cause as printed: a problem line met by calls of
// several tools names them all, most frequent first, instead of the
// first member's call alone.
func (g *failureGroup) heading() string {
	if len(g.toolOrder) < 2 {
		return g.cause
	}
	_, rest, _ := strings.Cut(g.cause, ": ")
	tools := slices.Clone(g.toolOrder)
	sort.SliceStable(tools, func(i, j int) bool { return g.tools[tools[i]] > g.tools[tools[j]] })
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = fmt.Sprintf("%s (%d)", t, g.tools[t])
	}
	return strings.Join(parts, ", ") + ": " + rest
}

var (
	longToken = regexp.MustCompile(`\b[0-9a-zA-Z_-]*[0-9][0-9a-zA-Z_-]{11,}\b`)
	number    = regexp.MustCompile(`\d+`)
)

// causeKey reduces a failure's first line to what specs with the same
// cause share: IDs and numbers do not count.
func causeKey(line string) string {
	return number.ReplaceAllString(longToken.ReplaceAllString(line, "<id>"), "N")
}

// knownCause is a first cause the summary recognises in any spec's
// failure message, with what it says instead.
type knownCause struct {
	re *regexp.Regexp
	// refusal marks the cause whose match is a tool (m[1]) and the
	// arguments its schema refuses (m[2]): one group per tool, listing
	// every argument any spec met, worded by refusalText.
	refusal bool
	text    func(m []string) string
}

// causeReader finds failure messages' first causes: the known causes,
// compiled once, and the arguments the contract gives each tool (any other
// refused argument is the kit's bait).
type causeReader struct {
	known []knownCause
	// args holds each tool's input properties in the reference server's
	// schema, which TestToolSnapshots pins; required, its required ones.
	args     map[string]map[string]bool
	required map[string][]string
	// toolWord finds a contract tool's name in a failure message.
	toolWord *regexp.Regexp
}

// newCauseReader compiles the known causes and reads the contract's
// arguments, once per summary.
func newCauseReader(tools []string) *causeReader {
	c := &causeReader{known: knownCauses(tools), args: map[string]map[string]bool{}, required: map[string][]string{},
		toolWord: regexp.MustCompile(`\b(` + strings.Join(tools, "|") + `)\b`)}
	for _, t := range server.AllTools(nil) {
		props := map[string]bool{}
		if in, ok := t.Def.InputSchema.(*jsonschema.Schema); ok {
			for name := range in.Properties {
				props[name] = true
			}
			c.required[t.Name()] = in.Required
		}
		c.args[t.Name()] = props
	}
	return c
}

// sdkArgCause returns the key and words of an SDK's refusal of the
// arguments in a failure message, or false. The contract tool is the one
// the message names before the SDK's words, else the server's tool when
// it has the contract's name.
func (c *causeReader) sdkArgCause(msg string) (key, cause string, ok bool) {
	flat := strings.Join(strings.Fields(msg), " ")
	e, ok := parseSDKArgError(flat)
	if !ok {
		return "", "", false
	}
	tool := e.tool
	if i := strings.Index(flat, e.tool); i >= 0 {
		if m := c.toolWord.FindString(flat[:i]); m != "" {
			tool = m
		}
	}
	if _, known := c.args[tool]; !known {
		tool = "<contract tool>"
	}
	var required []string
	for _, a := range c.required[tool] {
		if !slices.Contains(e.missing, a) {
			required = append(required, a)
		}
	}
	return "sdkargs:" + e.sdk + ":" + tool + ":" + strings.Join(e.missing, ","), argErrorText(tool, e, required), true
}

// knownCauses are causes that show through many specs' messages: a tool's
// input schema that refuses an argument the contract gives it, a result
// without structuredContent (TOOLS-3).
func knownCauses(contractTools []string) []knownCause {
	tools := strings.Join(contractTools, "|")
	return []knownCause{
		{re: regexp.MustCompile(`^\s*(` + tools + `)\b.*unexpected additional properties \[([^\]]*)\]`), refusal: true},
		{re: regexp.MustCompile(`^\s*(` + tools + `)\b.*result has no structuredContent object`), text: func(m []string) string {
			return fmt.Sprintf("TOOLS-3: %s's results have no structuredContent object, so the kit cannot read their values", m[1])
		}},
		// The renewal specs' and the exec helper's words for "no renewal
		// at all" (a renewal by the wrong amount is worded otherwise).
		{re: regexp.MustCompile(`must renew the owned sandbox by \d+ s before it returns|no set-timeout request for the owned sandbox after the call's work`), text: func([]string) string {
			return "RENEW-1: a call on an owned sandbox is not followed by a renewal (POST /sandboxes/{id}/timeout) before it returns"
		}},
		// A bounds case that sends an argument the tool does not define.
		{re: regexp.MustCompile(`^\s*(` + tools + `) unknown \S+: \S+: want isError true, got a success`), text: func([]string) string {
			return "VAL-4: tools accept arguments they do not define, instead of rejecting them"
		}},
		{re: regexp.MustCompile(`^\s*(` + tools + `) sandbox_id=unconfigured-provider: \S+: the error must name the invalid field`), text: func([]string) string {
			return "VAL-6: a sandbox_id whose provider prefix the server does not know is refused with an error that names no field (sandbox_id)"
		}},
	}
}

// refusalText is the cause of a tool whose input schema refuses args.
func refusalText(tool string, args []string) string {
	return fmt.Sprintf("%s's input schema refuses the argument(s) %s that the contract gives it (unexpected additional properties): "+
		"the tool takes other argument names (map them with --tool-map) or lacks the arguments", tool, strings.Join(args, ", "))
}

// refusedArgs returns the arguments of an "unexpected additional
// properties" list that the contract gives tool, sorted. The others are
// the kit's bait: names it sends to be refused ("zq_" names, and the
// unknown-argument cases such as run_code's "interpreter"), whose refusal
// is what the spec asks for, not a cause.
func (c *causeReader) refusedArgs(tool, list string) []string {
	given := c.args[tool]
	var args []string
	for _, a := range strings.Fields(strings.ReplaceAll(list, `"`, "")) {
		if given[a] && !slices.Contains(args, a) {
			args = append(args, a)
		}
	}
	slices.Sort(args)
	return args
}

// firstCause returns the key and the words of a failure message's first
// cause: a known cause in any of its lines (a message of several problems
// lists one a line), else its first problem line, grouped with the lines
// that differ from it only in IDs and numbers.
//
// A tool's refused arguments are one cause, whichever of them a message
// names: the key is the tool's, and args are the arguments this message
// names (the group lists them all).
func (c *causeReader) firstCause(msg string) (key, cause string, args []string) {
	msg = withoutInconclusiveLine(msg)
	if key, cause, ok := c.sdkArgCause(msg); ok {
		return key, cause, nil
	}
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for _, kc := range c.known {
		for _, l := range lines {
			m := kc.re.FindStringSubmatch(l)
			switch {
			case m == nil:
			case kc.refusal:
				if args := c.refusedArgs(m[1], m[2]); len(args) > 0 {
					return refusalPrefix + m[1], refusalText(m[1], args), args
				}
			default:
				text := kc.text(m)
				return "known:" + text, text, nil
			}
		}
	}
	first := strings.TrimSpace(lines[0])
	if strings.HasSuffix(first, ":") && len(lines) > 1 {
		// "N problem(s):" heads a list: the first problem is the cause.
		first = strings.TrimSpace(lines[1])
	}
	// A problem line names its call first ("run_code(external) reset: ..."):
	// the same problem of another call is the same cause.
	key = first
	if _, rest, ok := strings.Cut(first, ": "); ok {
		key = rest
	}
	return "msg:" + causeKey(key), first, nil
}

// refusalPrefix begins the group key of a tool's refused arguments.
const refusalPrefix = "refuses:"

// firstLine is the first line of a failure message, trimmed.
func firstLine(msg string) string {
	msg = strings.TrimSpace(msg)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// entryValue returns the value of the spec's first report entry named
// name, or "".
func entryValue(sr types.SpecReport, name string) string {
	for _, e := range sr.ReportEntries {
		if e.Name == name {
			return e.Value.String()
		}
	}
	return ""
}

// writeFailures prints the failed specs grouped by first cause: a cause
// the kit diagnosed (see diagnose), the leak check, or else the same first
// line once IDs and numbers are left out. A group of one keeps the spec's
// own line.
func writeFailures(w io.Writer, r ginkgo.Report, cat Catalog) {
	causes := newCauseReader(cat.Tools)
	groups := map[string]*failureGroup{}
	var order []string
	add := func(key, cause, id string, rules []string, detail string, args ...string) {
		g := groups[key]
		if g == nil {
			g = &failureGroup{cause: cause}
			groups[key] = g
			order = append(order, key)
		}
		for _, a := range args {
			if !slices.Contains(g.args, a) {
				g.args = append(g.args, a)
			}
		}
		if tool, ok := strings.CutPrefix(key, refusalPrefix); ok {
			slices.Sort(g.args)
			g.cause = refusalText(tool, g.args)
		}
		g.specs = append(g.specs, id)
		for _, rule := range rules {
			if !slices.Contains(g.rules, rule) {
				g.rules = append(g.rules, rule)
			}
		}
		if detail != "" {
			g.details = append(g.details, id+": "+detail)
		}
	}
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt || !sr.State.Is(types.SpecStateFailureStates) {
			continue
		}
		_, id, rules := cat.Classify(sr.Labels())
		rules = cat.ownRules(id, rules)
		if strings.HasPrefix(sr.Failure.Message, RunErrorPrefix) {
			// The run never started: no spec ran, so no rule is to blame.
			fmt.Fprintf(w, "  RUN ERROR %s\n", truncate(firstLine(strings.TrimPrefix(sr.Failure.Message, RunErrorPrefix+": ")), 600))
			continue
		}
		msgs := []string{sr.Failure.Message}
		for _, af := range sr.AdditionalFailures {
			msgs = append(msgs, af.Failure.Message)
		}
		primary := true
		for _, msg := range msgs {
			line := firstLine(msg)
			switch {
			case strings.HasPrefix(line, LeakPrefix) && !primary && slices.Contains(rules, "SESSION-1"):
				// A SESSION-1 spec that already failed reports its own
				// left-behind sandboxes: the leak check would say it twice.
			case strings.HasPrefix(line, LeakPrefix):
				add("leak", CauseLeak, id, []string{"SESSION-1"}, truncate(strings.TrimPrefix(line, LeakPrefix+": "), 400))
			case strings.HasPrefix(line, WrongSandboxPrefix):
				// A finding of its own rule, like a leak: not under the
				// running spec's rules, and shown whatever else it failed.
				add("wrong-sandbox", CauseWrongSandbox, id, []string{WrongSandboxRule},
					truncate(strings.TrimPrefix(line, WrongSandboxPrefix+": "), 400))
			case primary:
				if cause := entryValue(sr, EntryCause); cause != "" {
					add("cause:"+cause, cause, id, nil, "")
				} else {
					key, cause, args := causes.firstCause(msg)
					add(key, cause, id, rules, "", args...)
					groups[key].noteTool(causes.callTool(key, cause))
				}
			}
			primary = false
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return len(groups[order[i]].specs) > len(groups[order[j]].specs) })
	for _, key := range order {
		g := groups[key]
		rules := ""
		if len(g.rules) > 0 {
			rules = "[" + strings.Join(g.rules, " ") + "] "
		}
		if len(g.specs) == 1 && len(g.details) == 0 && !strings.HasPrefix(key, "cause:") {
			fmt.Fprintf(w, "  FAIL %s %s%s\n", g.specs[0], rules, truncate(g.cause, 300))
			continue
		}
		cause := g.heading()
		if !strings.HasPrefix(key, "cause:") {
			cause = truncate(cause, 600)
		}
		fmt.Fprintf(w, "  FAIL %s%s\n", rules, cause)
		if len(g.details) > 0 {
			for _, d := range g.details {
				fmt.Fprintf(w, "       %s\n", d)
			}
			continue
		}
		fmt.Fprintf(w, "       %s: %s\n", plural(len(g.specs), "spec", "specs"), strings.Join(g.specs, ", "))
	}
}

// writeSkips prints why specs were skipped, grouped by reason, leaving out
// the specs another process of the run claimed and the inconclusive ones
// (writeInconclusive).
func writeSkips(w io.Writer, r ginkgo.Report, cat Catalog) {
	by := map[string][]string{}
	var order []string
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt || !sr.State.Is(types.SpecStateSkipped) || IsInconclusive(sr) {
			continue
		}
		reason := firstLine(sr.Failure.Message)
		if reason == ClaimedElsewhere {
			continue
		}
		if reason == "" {
			reason = "not selected (label filter, focus or skip)"
		}
		_, id, _ := cat.Classify(sr.Labels())
		if by[reason] == nil {
			order = append(order, reason)
		}
		by[reason] = append(by[reason], id)
	}
	if len(order) == 0 {
		return
	}
	sort.SliceStable(order, func(i, j int) bool { return len(by[order[i]]) > len(by[order[j]]) })
	fmt.Fprintln(w, "skipped:")
	for _, reason := range order {
		ids := by[reason]
		list := strings.Join(ids, ", ")
		if len(ids) > 6 {
			list = strings.Join(ids[:6], ", ") + fmt.Sprintf(" and %d more", len(ids)-6)
		}
		fmt.Fprintf(w, "  SKIP %s: %s (%s)\n", truncate(reason, 200), plural(len(ids), "spec", "specs"), list)
	}
}

// writeEndings prints how the server processes the kit started ended,
// added up over every spec (stdio targets only).
func writeEndings(w io.Writer, r ginkgo.Report) {
	sum := map[string]int{}
	total := 0
	for _, sr := range r.SpecReports {
		for _, e := range sr.ReportEntries {
			if e.Name != EntryEndings {
				continue
			}
			for _, part := range strings.Split(e.Value.String(), ";") {
				how, n, ok := strings.Cut(part, "=")
				if !ok {
					continue
				}
				if k, err := strconv.Atoi(n); err == nil {
					sum[how] += k
					total += k
				}
			}
		}
	}
	if total == 0 {
		return
	}
	var parts []string
	for _, how := range []string{EndedOnEOF, EndedOnSIGTERM, EndedKilled, EndedEarly} {
		if sum[how] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", sum[how], how))
		}
	}
	fmt.Fprintf(w, "server processes: %s closed by the kit: %s\n", plural(total, "session", "sessions"), strings.Join(parts, ", "))
	if sum[EndedOnSIGTERM]+sum[EndedKilled] > 0 {
		fmt.Fprintln(w, "  a stdio server must exit when its stdin ends (MCP stdio shutdown); one that needs a signal may skip its close-time cleanup")
	}
}
