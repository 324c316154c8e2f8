package fakeenvd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// expandTrSet expands tr escapes, ranges and [:classes:] into bytes.
func expandTrSet(s string) ([]byte, error) {
	var raw []byte
	classes := map[string]func(byte) bool{
		"alpha": func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' },
		"digit": func(c byte) bool { return c >= '0' && c <= '9' },
		"alnum": func(c byte) bool {
			return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		},
		"lower": func(c byte) bool { return c >= 'a' && c <= 'z' },
		"upper": func(c byte) bool { return c >= 'A' && c <= 'Z' },
		"space": func(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' },
		"blank": func(c byte) bool { return c == ' ' || c == '\t' },
		"punct": func(c byte) bool {
			return c > ' ' && c < 0x7f && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
		},
		"xdigit": func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' },
		"print":  func(c byte) bool { return c >= ' ' && c < 0x7f },
		"cntrl":  func(c byte) bool { return c < ' ' || c == 0x7f },
	}
	// First pass: unescape, tracking which bytes are literal (escaped).
	type tok struct {
		c   byte
		lit bool
	}
	var toks []tok
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '[' && i+1 < len(s) && s[i+1] == ':' {
			if j := strings.Index(s[i+2:], ":]"); j >= 0 {
				name := s[i+2 : i+2+j]
				fn, ok := classes[name]
				if !ok {
					return nil, fmt.Errorf("invalid character class '%s'", name)
				}
				for b := 0; b < 256; b++ {
					if fn(byte(b)) {
						toks = append(toks, tok{byte(b), true})
					}
				}
				i += j + 3
				continue
			}
		}
		if c == '\\' && i+1 < len(s) {
			i++
			switch e := s[i]; e {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'r':
				c = '\r'
			case 'a':
				c = 7
			case 'b':
				c = 8
			case 'f':
				c = 12
			case 'v':
				c = 11
			case '0', '1', '2', '3', '4', '5', '6', '7':
				j := i
				for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(s[i:j], 8, 8)
				c = byte(v)
				i = j - 1
			default:
				c = e
			}
			toks = append(toks, tok{c, true})
			continue
		}
		toks = append(toks, tok{c, false})
	}
	for i := 0; i < len(toks); i++ {
		if i+2 < len(toks) && toks[i+1].c == '-' && !toks[i+1].lit {
			lo, hi := toks[i].c, toks[i+2].c
			if lo > hi {
				return nil, fmt.Errorf("range-endpoints of '%c-%c' are in reverse collating sequence order", lo, hi)
			}
			for c := int(lo); c <= int(hi); c++ {
				raw = append(raw, byte(c))
			}
			i += 2
			continue
		}
		raw = append(raw, toks[i].c)
	}
	return raw, nil
}

func bTr(ctx context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "dscC", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 {
		return inv.Errorf("missing operand")
	}
	set1, err := expandTrSet(args[0])
	if err != nil {
		return inv.Errorf("%v", err)
	}
	var in1 [256]bool
	for _, c := range set1 {
		in1[c] = true
	}
	if o.has('c') || o.has('C') {
		set1 = set1[:0]
		for b := 0; b < 256; b++ {
			in1[b] = !in1[b]
			if in1[b] {
				set1 = append(set1, byte(b))
			}
		}
	}
	var set2 []byte
	if len(args) > 1 {
		if set2, err = expandTrSet(args[1]); err != nil {
			return inv.Errorf("%v", err)
		}
	}
	del := o.has('d')
	if !del && len(set2) == 0 && !o.has('s') {
		return inv.Errorf("missing operand after '%s'", args[0])
	}
	var table [256]byte
	for b := range table {
		table[b] = byte(b)
	}
	if !del && len(set2) > 0 {
		for i, c := range set1 {
			table[c] = set2[min(i, len(set2)-1)]
		}
	}
	var squeeze [256]bool
	if o.has('s') {
		sq := set2
		if len(sq) == 0 || del {
			sq = set1
			if del {
				sq = set2
			}
		}
		for _, c := range sq {
			squeeze[c] = true
		}
	}
	buf := make([]byte, 32<<10)
	out := make([]byte, 0, 32<<10)
	last := -1
	for ctx.Err() == nil {
		n, rerr := inv.Stdin.Read(buf)
		out = out[:0]
		for _, c := range buf[:n] {
			if del && in1[c] {
				continue
			}
			c = table[c]
			if squeeze[c] && int(c) == last {
				continue
			}
			last = int(c)
			out = append(out, c)
		}
		if _, err := inv.Stdout.Write(out); err != nil {
			return writeErr(inv, err)
		}
		if rerr != nil {
			break
		}
	}
	return 0
}

func bTee(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "aip", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	flag := os.O_TRUNC
	if o.has('a') {
		flag = os.O_APPEND
	}
	status := 0
	outs := []io.Writer{inv.Stdout}
	for _, name := range files {
		f, err := inv.Create(name, flag, 0o666)
		if err != nil {
			status = inv.Fail(err)
			continue
		}
		defer f.Close()
		outs = append(outs, f)
	}
	dead := make([]bool, len(outs))
	buf := make([]byte, 32<<10)
	for ctx.Err() == nil {
		n, rerr := inv.Stdin.Read(buf)
		for i, w := range outs {
			if dead[i] || n == 0 {
				continue
			}
			if _, err := w.Write(buf[:n]); err != nil {
				dead[i] = true
				if i > 0 || !isBrokenPipe(err) {
					status = writeErr(inv, err)
				}
			}
		}
		if rerr != nil {
			break
		}
	}
	return status
}

// parseList parses a cut LIST ("1,3-5,7-") into a membership test.
func parseList(s string) (func(int) bool, error) {
	type rng struct{ lo, hi int }
	var rs []rng
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		r := rng{1, 1 << 30}
		var err error
		if lo != "" {
			if r.lo, err = strconv.Atoi(lo); err != nil || r.lo < 1 {
				return nil, fmt.Errorf("invalid field value '%s'", part)
			}
		}
		if !isRange {
			r.hi = r.lo
		} else if hi != "" {
			if r.hi, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("invalid field range '%s'", part)
			}
		}
		rs = append(rs, r)
	}
	return func(i int) bool {
		for _, r := range rs {
			if i >= r.lo && i <= r.hi {
				return true
			}
		}
		return false
	}, nil
}

func bCut(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "sn", "dfcb")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	var list string
	mode := byte(0)
	for _, m := range []byte("fcb") {
		if o.has(m) {
			mode, list = m, o.val[m]
		}
	}
	if mode == 0 {
		return inv.Errorf("you must specify a list of bytes, characters, or fields")
	}
	in, err := parseList(list)
	if err != nil {
		return inv.Errorf("%v", err)
	}
	delim := "\t"
	if o.has('d') {
		delim = o.val['d']
		if len(delim) != 1 {
			return inv.Errorf("the delimiter must be a single character")
		}
	}
	return forEachInput(inv, files, true, func(_ string, r io.Reader) int {
		w := bufio.NewWriter(inv.Stdout)
		_, _ = eachLine(ctx, r, func(l []byte) error {
			s := strings.TrimSuffix(string(l), "\n")
			switch mode {
			case 'f':
				if !strings.Contains(s, delim) {
					if !o.has('s') {
						w.WriteString(s + "\n")
					}
					return nil
				}
				var keep []string
				for i, f := range strings.Split(s, delim) {
					if in(i + 1) {
						keep = append(keep, f)
					}
				}
				w.WriteString(strings.Join(keep, delim) + "\n")
			default:
				var keep []byte
				for i := 0; i < len(s); i++ {
					if in(i + 1) {
						keep = append(keep, s[i])
					}
				}
				w.Write(keep)
				w.WriteByte('\n')
			}
			return nil
		})
		if err := w.Flush(); err != nil {
			return writeErr(inv, err)
		}
		return 0
	})
}
