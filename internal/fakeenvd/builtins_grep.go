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
	var pats []string
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
	} else {
		if len(args) == 0 {
			fmt.Fprintln(inv.Stderr, "Usage: grep [OPTION]... PATTERNS [FILE]...")
			return 2
		}
		pats, args = []string{args[0]}, args[1:]
	}
	var split []string
	for _, p := range pats {
		split = append(split, strings.Split(p, "\n")...)
	}
	name := inv.Name()
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
	re, err := regexp.Compile(expr)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "grep: invalid regular expression: %v\n", err)
		return 2
	}
	maxCount := int64(-1)
	if o.has('m') {
		if maxCount, err = strconv.ParseInt(o.val['m'], 10, 64); err != nil {
			fmt.Fprintf(inv.Stderr, "grep: invalid max count\n")
			return 2
		}
	}
	recursive := o.has('r') || o.has('R')
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
	showName := (len(targets) > 1 || recursive) && !o.has('h') || o.has('H')
	matched, errs := false, false
	w := bufio.NewWriterSize(inv.Stdout, 32<<10)
	for _, t := range targets {
		f, err := inv.Open(t)
		if err != nil {
			if !o.has('s') {
				fmt.Fprintf(inv.Stderr, "grep: %s\n", errText(err))
			}
			errs = true
			continue
		}
		label := t
		if t == "-" {
			label = "(standard input)"
		}
		var count, lineNo int64
		werr, _ := eachLine(ctx, f, func(l []byte) error {
			lineNo++
			body := bytes.TrimSuffix(l, []byte("\n"))
			hit := re.Match(body) != o.has('v')
			if !hit {
				return nil
			}
			count++
			matched = true
			if o.has('q') {
				return io.EOF
			}
			if o.has('l') || o.has('L') || o.has('c') {
				if o.has('l') || o.has('L') {
					return io.EOF
				}
				return nil
			}
			prefix := ""
			if showName {
				prefix = label + ":"
			}
			if o.has('n') {
				prefix += strconv.FormatInt(lineNo, 10) + ":"
			}
			if o.has('o') && !o.has('v') {
				for _, m := range re.FindAll(body, -1) {
					if len(m) > 0 {
						fmt.Fprintf(w, "%s%s\n", prefix, m)
					}
				}
			} else {
				w.WriteString(prefix)
				w.Write(body)
				w.WriteByte('\n')
			}
			if maxCount >= 0 && count >= maxCount {
				return io.EOF
			}
			return nil
		})
		f.Close()
		if werr != nil && werr != io.EOF {
			return writeErr(inv, werr)
		}
		switch {
		case o.has('q') && matched:
			w.Flush()
			return 0
		case o.has('c'):
			if showName {
				fmt.Fprintf(w, "%s:%d\n", label, count)
			} else {
				fmt.Fprintf(w, "%d\n", count)
			}
		case o.has('l') && count > 0:
			fmt.Fprintln(w, label)
		case o.has('L') && count == 0:
			fmt.Fprintln(w, label)
		}
	}
	if err := w.Flush(); err != nil {
		return writeErr(inv, err)
	}
	switch {
	case errs && !(o.has('q') && matched):
		return 2
	case matched:
		return 0
	}
	return 1
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
