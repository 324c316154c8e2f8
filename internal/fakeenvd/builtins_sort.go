package fakeenvd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func bSort(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "rnufbsVhcm", "kto")
	if err != nil {
		fmt.Fprintf(inv.Stderr, "sort: %v\n", err)
		return 2
	}
	var lines []string
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, name := range files {
		f, err := inv.Open(name)
		if err != nil {
			fmt.Fprintf(inv.Stderr, "sort: %s\n", errText(err))
			return 2
		}
		data, err := inv.readAll(ctx, f)
		f.Close()
		if err != nil {
			return max(readFail(inv, err), 2)
		}
		for _, l := range splitLines(data) {
			lines = append(lines, strings.TrimSuffix(string(l), "\n"))
		}
	}
	keyStart, keyEnd := 0, 0
	if o.has('k') {
		ks, ke, _ := strings.Cut(o.val['k'], ",")
		keyStart, _ = strconv.Atoi(strings.TrimRight(ks, "bnrf"))
		keyEnd, _ = strconv.Atoi(strings.TrimRight(ke, "bnrf"))
		if keyStart < 1 {
			fmt.Fprintf(inv.Stderr, "sort: invalid key '%s'\n", o.val['k'])
			return 2
		}
	}
	sep := o.val['t']
	key := func(l string) string {
		if keyStart == 0 {
			return l
		}
		var fields []string
		if sep != "" {
			fields = strings.Split(l, sep)
		} else {
			fields = blankFields(l)
		}
		if keyStart > len(fields) {
			return ""
		}
		end := len(fields)
		if keyEnd > 0 {
			end = min(keyEnd, len(fields))
		}
		k := strings.Join(fields[keyStart-1:max(end, keyStart)], sep)
		if o.has('b') || sep == "" {
			k = strings.TrimLeft(k, " \t")
		}
		return k
	}
	cmp := func(a, b string) int {
		ka, kb := key(a), key(b)
		if o.has('f') {
			ka, kb = strings.ToUpper(ka), strings.ToUpper(kb)
		}
		var c int
		switch {
		case o.has('n') || o.has('h'):
			c = compareFloat(leadingNumber(ka), leadingNumber(kb))
			if c == 0 && !o.has('u') {
				c = strings.Compare(ka, kb)
			}
		case o.has('V'):
			c = compareVersion(ka, kb)
		default:
			c = strings.Compare(ka, kb)
		}
		if c == 0 && !o.has('s') && !o.has('u') {
			c = strings.Compare(a, b)
		}
		if o.has('r') {
			c = -c
		}
		return c
	}
	if o.has('c') {
		for i := 1; i < len(lines); i++ {
			if cmp(lines[i-1], lines[i]) > 0 {
				fmt.Fprintf(inv.Stderr, "sort: -:%d: disorder: %s\n", i+1, lines[i])
				return 1
			}
		}
		return 0
	}
	slices.SortStableFunc(lines, cmp)
	if o.has('u') {
		lines = slices.CompactFunc(lines, func(a, b string) bool { return cmp(a, b) == 0 })
	}
	var out io.Writer = inv.Stdout
	if o.has('o') {
		f, err := inv.Create(o.val['o'], os.O_TRUNC, 0o666)
		if err != nil {
			fmt.Fprintf(inv.Stderr, "sort: %s\n", errText(err))
			return 2
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 32<<10)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return writeErr(inv, err)
	}
	return 0
}

// blankFields splits l into fields that each start with their leading
// blanks, as sort(1) does without -t.
func blankFields(l string) []string {
	var out []string
	i := 0
	for i < len(l) {
		j := i
		for j < len(l) && (l[j] == ' ' || l[j] == '\t') {
			j++
		}
		for j < len(l) && l[j] != ' ' && l[j] != '\t' {
			j++
		}
		out = append(out, l[i:j])
		i = j
	}
	return out
}

func leadingNumber(s string) float64 {
	s = strings.TrimLeft(s, " \t")
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || end == 0 && (s[end] == '-' || s[end] == '+')) {
		end++
	}
	v, _ := strconv.ParseFloat(s[:end], 64)
	if end < len(s) {
		switch s[end] {
		case 'K', 'k':
			v *= 1 << 10
		case 'M':
			v *= 1 << 20
		case 'G':
			v *= 1 << 30
		}
	}
	return v
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareVersion compares strings with embedded numbers numerically.
func compareVersion(a, b string) int {
	for a != "" && b != "" {
		da, db := a[0] >= '0' && a[0] <= '9', b[0] >= '0' && b[0] <= '9'
		if da && db {
			i, j := 0, 0
			for i < len(a) && a[i] >= '0' && a[i] <= '9' {
				i++
			}
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			na, _ := strconv.ParseUint(a[:i], 10, 64)
			nb, _ := strconv.ParseUint(b[:j], 10, 64)
			if na != nb {
				return compareFloat(float64(na), float64(nb))
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func bUniq(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "cdui", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	in := "-"
	if len(files) > 0 {
		in = files[0]
	}
	f, err := inv.Open(in)
	if err != nil {
		return inv.Fail(err)
	}
	defer f.Close()
	var out io.Writer = inv.Stdout
	if len(files) > 1 {
		of, err := inv.Create(files[1], os.O_TRUNC, 0o666)
		if err != nil {
			return inv.Fail(err)
		}
		defer of.Close()
		out = of
	}
	w := bufio.NewWriterSize(out, 32<<10)
	var prev string
	var n int64
	same := func(a, b string) bool {
		if o.has('i') {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	flush := func() {
		if n == 0 || o.has('d') && n < 2 || o.has('u') && n > 1 {
			return
		}
		if o.has('c') {
			fmt.Fprintf(w, "%7d %s\n", n, prev)
		} else {
			w.WriteString(prev)
			w.WriteByte('\n')
		}
	}
	_, rerr := eachLine(ctx, f, func(l []byte) error {
		s := strings.TrimSuffix(string(l), "\n")
		if n > 0 && same(s, prev) {
			n++
			return nil
		}
		flush()
		prev, n = s, 1
		return nil
	})
	flush()
	if err := w.Flush(); err != nil {
		return writeErr(inv, err)
	}
	if rerr != nil {
		return 1
	}
	return 0
}
