package fakeenvd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// breToERE converts a POSIX basic regular expression to Go (RE2) syntax.
func breToERE(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			switch n := p[i]; n {
			case '(', ')', '{', '}', '|', '+', '?':
				b.WriteByte(n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case c == '[':
			j := i + 1
			if j < len(p) && p[j] == '^' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				if p[j] == '[' && j+1 < len(p) && p[j+1] == ':' {
					if k := strings.Index(p[j+2:], ":]"); k >= 0 {
						j += k + 4
						continue
					}
				}
				j++
			}
			if j >= len(p) {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(p[i : j+1])
			i = j
		case strings.IndexByte("(){}|+?", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '*' && (i == 0 || p[i-1] == '^' && i == 1):
			b.WriteString(`\*`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func bGrep(ctx context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "ivcnlLqsFEGwxohHrRzZa", "emABC")
	if err != nil {
		fmt.Fprintf(inv.Stderr, "grep: %v\n", err)
		return 2
	}
	pats, args, ok := grepPatterns(inv, o, args)
	if !ok {
		fmt.Fprintln(inv.Stderr, "Usage: grep [OPTION]... PATTERNS [FILE]...")
		return 2
	}
	re, err := grepRegexp(o, inv.Name(), pats)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "grep: invalid regular expression: %v\n", err)
		return 2
	}
	g := grepRun{o: o, re: re, maxCount: -1}
	if o.has('m') {
		if g.maxCount, err = strconv.ParseInt(o.val['m'], 10, 64); err != nil {
			fmt.Fprintf(inv.Stderr, "grep: invalid max count\n")
			return 2
		}
	}
	recursive := o.has('r') || o.has('R')
	targets := grepTargets(inv, o, args, recursive)
	g.showName = (len(targets) > 1 || recursive) && !o.has('h') || o.has('H')
	g.w = bufio.NewWriterSize(inv.Stdout, 32<<10)
	for _, t := range targets {
		if code, done := g.file(ctx, inv, t); done {
			return code
		}
	}
	if err := g.w.Flush(); err != nil {
		return writeErr(inv, err)
	}
	switch {
	case g.errs && !(o.has('q') && g.matched):
		return 2
	case g.matched:
		return 0
	}
	return 1
}

// grepPatterns returns the patterns (every -e, else the first operand)
// and the remaining operands; false when there is no pattern at all.
func grepPatterns(inv *Invocation, o opts, args []string) (pats, rest []string, ok bool) {
	if o.has('e') {
		// getopt keeps only the last -e; collect them all.
		for i := 1; i < len(inv.Args); i++ {
			a := inv.Args[i]
			if a == "-e" && i+1 < len(inv.Args) {
				pats = append(pats, inv.Args[i+1])
				i++
			} else if strings.HasPrefix(a, "-e") && len(a) > 2 {
				pats = append(pats, a[2:])
			}
		}
		return pats, args, true
	}
	if len(args) == 0 {
		return nil, nil, false
	}
	return []string{args[0]}, args[1:], true
}

// grepRegexp compiles the patterns (one per line of each) into one
// expression, as -F/-E/basic, -w, -x and -i ask; name "fgrep" and "egrep"
// imply -F and -E.
func grepRegexp(o opts, name string, pats []string) (*regexp.Regexp, error) {
	var split []string
	for _, p := range pats {
		split = append(split, strings.Split(p, "\n")...)
	}
	fixed := o.has('F') || name == "fgrep"
	ere := o.has('E') || name == "egrep"
	for i, p := range split {
		switch {
		case fixed:
			p = regexp.QuoteMeta(p)
		case !ere:
			p = breToERE(p)
		}
		if o.has('w') {
			p = `\b(?:` + p + `)\b`
		}
		if o.has('x') {
			p = `^(?:` + p + `)$`
		}
		split[i] = "(?:" + p + ")"
	}
	expr := strings.Join(split, "|")
	if o.has('i') {
		expr = "(?i)" + expr
	}
	return regexp.Compile(expr)
}

// grepTargets expands the operands ("-" is stdin; no operand is stdin, or
// "." when recursive) into files, reporting directories unless recursive.
func grepTargets(inv *Invocation, o opts, args []string, recursive bool) []string {
	if len(args) == 0 {
		if recursive {
			args = []string{"."}
		} else {
			args = []string{"-"}
		}
	}
	var targets []string
	for _, a := range args {
		if a == "-" {
			targets = append(targets, a)
			continue
		}
		info, err := inv.FS.Stat(inv.Abs(a))
		if err == nil && info.IsDir() {
			if !recursive {
				if !o.has('s') {
					fmt.Fprintf(inv.Stderr, "grep: %s: Is a directory\n", a)
				}
				continue
			}
			collectFiles(inv, a, &targets)
			continue
		}
		targets = append(targets, a)
	}
	return targets
}

// grepRun is the state of one grep over its files.
type grepRun struct {
	o        opts
	re       *regexp.Regexp
	maxCount int64 // -1 = no -m
	showName bool
	w        *bufio.Writer
	matched  bool
	errs     bool
}

// file greps one target and writes its lines or summary; done reports
// that grep ends now with code (-q matched, or a write error).
func (g *grepRun) file(ctx context.Context, inv *Invocation, t string) (code int, done bool) {
	o := g.o
	f, err := inv.Open(t)
	if err != nil {
		if !o.has('s') {
			fmt.Fprintf(inv.Stderr, "grep: %s\n", errText(err))
		}
		g.errs = true
		return 0, false
	}
	label := t
	if t == "-" {
		label = "(standard input)"
	}
	var count, lineNo int64
	werr, _ := eachLine(ctx, f, func(l []byte) error {
		lineNo++
		body := bytes.TrimSuffix(l, []byte("\n"))
		if g.re.Match(body) == o.has('v') {
			return nil
		}
		count++
		g.matched = true
		switch {
		case o.has('q'), o.has('l'), o.has('L'):
			return io.EOF
		case o.has('c'):
			return nil
		}
		g.line(label, lineNo, body)
		if g.maxCount >= 0 && count >= g.maxCount {
			return io.EOF
		}
		return nil
	})
	f.Close()
	if werr != nil && werr != io.EOF {
		return writeErr(inv, werr), true
	}
	switch {
	case o.has('q') && g.matched:
		g.w.Flush()
		return 0, true
	case o.has('c'):
		if g.showName {
			fmt.Fprintf(g.w, "%s:%d\n", label, count)
		} else {
			fmt.Fprintf(g.w, "%d\n", count)
		}
	case o.has('l') && count > 0:
		fmt.Fprintln(g.w, label)
	case o.has('L') && count == 0:
		fmt.Fprintln(g.w, label)
	}
	return 0, false
}

// line writes one matching line (or, with -o, its matches) with the file
// name and line number prefixes asked for.
func (g *grepRun) line(label string, lineNo int64, body []byte) {
	prefix := ""
	if g.showName {
		prefix = label + ":"
	}
	if g.o.has('n') {
		prefix += strconv.FormatInt(lineNo, 10) + ":"
	}
	if g.o.has('o') && !g.o.has('v') {
		for _, m := range g.re.FindAll(body, -1) {
			if len(m) > 0 {
				fmt.Fprintf(g.w, "%s%s\n", prefix, m)
			}
		}
		return
	}
	g.w.WriteString(prefix)
	g.w.Write(body)
	g.w.WriteByte('\n')
}

// collectFiles appends the regular files below dir (as shown paths).
func collectFiles(inv *Invocation, dir string, out *[]string) {
	ents, err := inv.FS.ReadDir(inv.Abs(dir))
	if err != nil {
		return
	}
	for _, e := range ents {
		p := strings.TrimSuffix(dir, "/") + "/" + e.Name()
		switch {
		case e.IsDir():
			collectFiles(inv, p, out)
		case e.Type().IsRegular():
			*out = append(*out, p)
		}
	}
}
