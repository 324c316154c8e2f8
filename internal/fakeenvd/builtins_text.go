package fakeenvd

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// textBuiltins are the filters.
func textBuiltins() map[string]Builtin {
	return map[string]Builtin{
		"head": bHead, "tail": bTail, "wc": bWc, "grep": bGrep, "egrep": bGrep, "fgrep": bGrep,
		"sort": bSort, "uniq": bUniq, "tr": bTr, "tee": bTee, "cut": bCut, "base64": bBase64,
		"sha256sum": hashCmd(sha256.New), "sha1sum": hashCmd(sha1.New), "md5sum": hashCmd(md5.New),
		"sha512sum": hashCmd(sha512.New), "seq": bSeq, "yes": bYes, "rev": bRev,
	}
}

func bHead(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(legacyCount(inv.Args[1:]), "qv", "nc")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	lines, bytesMode, spec := int64(10), o.has('c'), o.val['n']
	if bytesMode {
		spec = o.val['c']
	}
	allBut := strings.HasPrefix(spec, "-")
	if spec != "" {
		v, err := parseSize(strings.TrimPrefix(spec, "-"))
		if err != nil {
			return inv.Errorf("invalid number of %s: '%s'", map[bool]string{true: "bytes", false: "lines"}[bytesMode], spec)
		}
		lines = v
	}
	return forEachInput(inv, files, o.has('q'), func(_ string, r io.Reader) int {
		switch {
		case bytesMode && !allBut:
			if _, err := io.CopyN(inv.Stdout, ctxReader{ctx, r}, lines); err != nil && err != io.EOF && ctx.Err() == nil {
				return writeErr(inv, err)
			}
			return 0
		case allBut:
			data, err := inv.readAll(ctx, r)
			if err != nil {
				return readFail(inv, err)
			}
			if bytesMode {
				data = data[:max(int64(len(data))-lines, 0)]
			} else {
				ls := splitLines(data)
				data = bytes.Join(ls[:max(int64(len(ls))-lines, 0)], nil)
			}
			if _, err := inv.Stdout.Write(data); err != nil {
				return writeErr(inv, err)
			}
			return 0
		}
		n := int64(0)
		if lines == 0 {
			return 0
		}
		werr, _ := eachLine(ctx, r, func(l []byte) error {
			if _, err := inv.Stdout.Write(l); err != nil {
				return err
			}
			n++
			if n >= lines {
				return io.EOF
			}
			return nil
		})
		if werr != nil && werr != io.EOF {
			return writeErr(inv, werr)
		}
		return 0
	})
}

func bTail(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(legacyCount(inv.Args[1:]), "qvfF", "nc")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if o.has('f') || o.has('F') {
		return inv.Errorf("following files (-f) is not supported in this sandbox")
	}
	bytesMode, spec := o.has('c'), o.val['n']
	if bytesMode {
		spec = o.val['c']
	}
	fromStart := strings.HasPrefix(spec, "+")
	count := int64(10)
	if spec != "" {
		v, err := parseSize(strings.TrimLeft(spec, "+-"))
		if err != nil {
			return inv.Errorf("invalid number of lines: '%s'", spec)
		}
		count = v
	}
	return forEachInput(inv, files, o.has('q'), func(_ string, r io.Reader) int {
		data, err := inv.readAll(ctx, r)
		if err != nil {
			return readFail(inv, err)
		}
		var out []byte
		if bytesMode {
			if fromStart {
				out = data[min(max(count-1, 0), int64(len(data))):]
			} else {
				out = data[max(int64(len(data))-count, 0):]
			}
		} else {
			ls := splitLines(data)
			if fromStart {
				ls = ls[min(max(count-1, 0), int64(len(ls))):]
			} else {
				ls = ls[max(int64(len(ls))-count, 0):]
			}
			out = bytes.Join(ls, nil)
		}
		if _, err := inv.Stdout.Write(out); err != nil {
			return writeErr(inv, err)
		}
		return 0
	})
}

func bWc(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "lwcmL", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	show := []byte{}
	for _, c := range []byte("lwcm") {
		if o.has(c) {
			show = append(show, c)
		}
	}
	if len(show) == 0 {
		show = []byte("lwc")
	}
	type counts struct{ l, w, c, m int64 }
	var all []counts
	var names []string
	status := 0
	stdin := len(files) == 0
	if stdin {
		files = []string{"-"}
	}
	var total counts
	for _, name := range files {
		f, err := inv.Open(name)
		if err != nil {
			status = inv.Errorf("%s", errText(err))
			continue
		}
		var c counts
		inWord := false
		buf := make([]byte, 32<<10)
		for ctx.Err() == nil {
			n, err := f.Read(buf)
			for _, b := range buf[:n] {
				c.c++
				if b&0xC0 != 0x80 {
					c.m++
				}
				switch b {
				case '\n':
					c.l++
					inWord = false
				case ' ', '\t', '\r', '\v', '\f':
					inWord = false
				default:
					if !inWord {
						c.w++
						inWord = true
					}
				}
			}
			if err != nil {
				break
			}
		}
		f.Close()
		all = append(all, c)
		if name == "-" && stdin {
			name = ""
		}
		names = append(names, name)
		total.l, total.w, total.c, total.m = total.l+c.l, total.w+c.w, total.c+c.c, total.m+c.m
	}
	if len(all) > 1 {
		all = append(all, total)
		names = append(names, "total")
	}
	width := len(strconv.FormatInt(total.c, 10))
	if stdin && len(show) > 1 {
		width = 7
	}
	if len(show) == 1 && len(all) == 1 {
		width = 1
	}
	for i, c := range all {
		var parts []string
		for _, s := range show {
			v := map[byte]int64{'l': c.l, 'w': c.w, 'c': c.c, 'm': c.m}[s]
			parts = append(parts, fmt.Sprintf("%*d", width, v))
		}
		line := strings.Join(parts, " ")
		if names[i] != "" {
			line += " " + names[i]
		}
		if _, err := fmt.Fprintln(inv.Stdout, line); err != nil {
			return writeErr(inv, err)
		}
	}
	return status
}

func bRev(ctx context.Context, inv *Invocation) int {
	return forEachInput(inv, inv.Args[1:], true, func(_ string, r io.Reader) int {
		werr, _ := eachLine(ctx, r, func(l []byte) error {
			nl := bytes.HasSuffix(l, []byte("\n"))
			rs := []rune(strings.TrimSuffix(string(l), "\n"))
			slices.Reverse(rs)
			out := string(rs)
			if nl {
				out += "\n"
			}
			_, err := io.WriteString(inv.Stdout, out)
			return err
		})
		if werr != nil {
			return writeErr(inv, werr)
		}
		return 0
	})
}
