package fakeenvd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
)

func bBase64(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "di", "w")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	decode := o.has('d') || hasLong(o, "decode")
	wrap := 76
	if o.has('w') {
		if wrap, err = strconv.Atoi(o.val['w']); err != nil || wrap < 0 {
			return inv.Errorf("invalid wrap size: '%s'", o.val['w'])
		}
	}
	if v, ok := o.long["wrap"]; ok {
		if wrap, err = strconv.Atoi(v); err != nil || wrap < 0 {
			return inv.Errorf("invalid wrap size: '%s'", v)
		}
	}
	name := "-"
	if len(files) > 0 {
		name = files[0]
	}
	f, err := inv.Open(name)
	if err != nil {
		return inv.Fail(err)
	}
	data, err := inv.readAll(ctx, f)
	f.Close()
	if err != nil {
		return readFail(inv, err)
	}
	if decode {
		clean := bytes.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, data)
		out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, err := base64.StdEncoding.Decode(out, clean)
		if err != nil {
			if n2, err2 := base64.RawStdEncoding.Decode(out, clean); err2 == nil {
				n, err = n2, nil
			}
		}
		if _, werr := inv.Stdout.Write(out[:n]); werr != nil {
			return writeErr(inv, werr)
		}
		if err != nil {
			return inv.Errorf("invalid input")
		}
		return 0
	}
	enc := base64.StdEncoding.EncodeToString(data)
	w := bufio.NewWriterSize(inv.Stdout, 32<<10)
	if wrap == 0 {
		w.WriteString(enc)
	} else {
		for len(enc) > wrap {
			w.WriteString(enc[:wrap])
			w.WriteByte('\n')
			enc = enc[wrap:]
		}
		w.WriteString(enc)
	}
	if len(data) > 0 && wrap > 0 {
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return writeErr(inv, err)
	}
	return 0
}

// hashCmd builds sha256sum and friends.
func hashCmd(newHash func() hash.Hash) Builtin {
	return func(ctx context.Context, inv *Invocation) int {
		_, files, err := getopt(inv.Args[1:], "btz", "")
		if err != nil {
			return inv.Errorf("%v", err)
		}
		if len(files) == 0 {
			files = []string{"-"}
		}
		status := 0
		for _, name := range files {
			f, err := inv.Open(name)
			if err != nil {
				status = inv.Fail(err)
				continue
			}
			h := newHash()
			_, err = io.Copy(h, ctxReader{ctx, f})
			f.Close()
			if err != nil {
				status = inv.Errorf("%s: %s", name, errnoText(unwrapPathErr(err)))
				continue
			}
			if _, err := fmt.Fprintf(inv.Stdout, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), name); err != nil {
				return writeErr(inv, err)
			}
		}
		return status
	}
}

func bSeq(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	sep, width := "\n", false
	var nums []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-s" && i+1 < len(args):
			sep = args[i+1]
			i++
		case strings.HasPrefix(a, "-s") && len(a) > 2:
			sep = a[2:]
		case a == "-w":
			width = true
		default:
			nums = append(nums, a)
		}
	}
	if len(nums) == 0 || len(nums) > 3 {
		return inv.Errorf("missing operand")
	}
	first, incr := "1", "1"
	last := nums[len(nums)-1]
	if len(nums) >= 2 {
		first = nums[0]
	}
	if len(nums) == 3 {
		incr = nums[1]
	}
	w := bufio.NewWriterSize(inv.Stdout, 32<<10)
	isInt := !strings.ContainsAny(first+incr+last, ".eE")
	if isInt {
		f, e1 := strconv.ParseInt(first, 10, 64)
		in, e2 := strconv.ParseInt(incr, 10, 64)
		l, e3 := strconv.ParseInt(last, 10, 64)
		if e1 != nil || e2 != nil || e3 != nil || in == 0 {
			return inv.Errorf("invalid argument")
		}
		pad := 0
		if width {
			pad = max(len(strconv.FormatInt(f, 10)), len(strconv.FormatInt(l, 10)))
		}
		var buf []byte
		n := 0
		for v := f; in > 0 && v <= l || in < 0 && v >= l; v += in {
			if n > 0 {
				w.WriteString(sep)
			}
			buf = strconv.AppendInt(buf[:0], v, 10)
			for len(buf) < pad {
				buf = append([]byte{'0'}, buf...)
			}
			if _, err := w.Write(buf); err != nil {
				return writeErr(inv, err)
			}
			if n++; n%4096 == 0 && ctx.Err() != nil {
				return 1
			}
		}
		if n > 0 {
			w.WriteString("\n")
		}
	} else {
		f, e1 := strconv.ParseFloat(first, 64)
		in, e2 := strconv.ParseFloat(incr, 64)
		l, e3 := strconv.ParseFloat(last, 64)
		if e1 != nil || e2 != nil || e3 != nil || in == 0 {
			return inv.Errorf("invalid floating point argument")
		}
		prec := 0
		for _, s := range []string{first, incr} {
			if i := strings.IndexByte(s, '.'); i >= 0 {
				prec = max(prec, len(s)-i-1)
			}
		}
		n := 0
		for i := 0; ; i++ {
			v := f + float64(i)*in
			if in > 0 && v > l+1e-9 || in < 0 && v < l-1e-9 {
				break
			}
			if n > 0 {
				w.WriteString(sep)
			}
			w.WriteString(strconv.FormatFloat(v, 'f', prec, 64))
			if n++; n%4096 == 0 && ctx.Err() != nil {
				return 1
			}
		}
		if n > 0 {
			w.WriteString("\n")
		}
	}
	if err := w.Flush(); err != nil {
		return writeErr(inv, err)
	}
	return 0
}

func bYes(ctx context.Context, inv *Invocation) int {
	s := "y"
	if len(inv.Args) > 1 {
		s = strings.Join(inv.Args[1:], " ")
	}
	line := s + "\n"
	buf := []byte(strings.Repeat(line, max(1, (16<<10)/len(line))))
	for ctx.Err() == nil {
		if _, err := inv.Stdout.Write(buf); err != nil {
			return writeErr(inv, err)
		}
	}
	return 1
}
