package fakeenvd

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

func fileTypeName(m fs.FileMode, size int64) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeCharDevice != 0:
		return "character special file"
	case size == 0:
		return "regular empty file"
	}
	return "regular file"
}

func bStat(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "Lt", "cf")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if f, ok := o.long["format"]; ok {
		o.set['c'], o.val['c'] = true, f
	}
	if len(args) == 0 {
		return inv.Errorf("missing operand")
	}
	status := 0
	for _, a := range args {
		p := inv.Abs(a)
		info, err := inv.FS.Lstat(p)
		if err == nil && o.has('L') {
			info, err = inv.FS.Stat(p)
		}
		if err != nil {
			status = inv.Errorf("cannot statx '%s': %s", a, errnoText(unwrapPathErr(err)))
			continue
		}
		uid, gid := ownerIDs(info)
		m := info.Mode()
		if o.has('c') {
			fmt.Fprintln(inv.Stdout, statFormat(inv, o.val['c'], a, p, info))
			continue
		}
		name := a
		if m&fs.ModeSymlink != 0 {
			if t, err := inv.FS.Readlink(p); err == nil {
				name = fmt.Sprintf("%s -> %s", a, t)
			}
		}
		fmt.Fprintf(inv.Stdout, "  File: %s\n  Size: %-10d\tBlocks: %-10d IO Block: 4096   %s\n",
			name, info.Size(), (info.Size()+511)/512, fileTypeName(m, info.Size()))
		fmt.Fprintf(inv.Stdout, "Access: (%04s/%s)  Uid: (%5d/%8s)   Gid: (%5d/%8s)\n",
			octalMode(m), modeString(m), uid, inv.sh.userName(uid), gid, inv.sh.groupName(gid))
		ts := info.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700")
		fmt.Fprintf(inv.Stdout, "Modify: %s\nChange: %s\n", ts, ts)
	}
	return status
}

// statFormat expands stat -c sequences.
func statFormat(inv *Invocation, format, name, abs string, info fs.FileInfo) string {
	var b strings.Builder
	uid, gid := ownerIDs(info)
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'n':
			b.WriteString(name)
		case 'N':
			b.WriteString("'" + name + "'")
			if t, err := inv.FS.Readlink(abs); err == nil {
				b.WriteString(" -> '" + t + "'")
			}
		case 's':
			b.WriteString(strconv.FormatInt(info.Size(), 10))
		case 'a':
			b.WriteString(octalMode(info.Mode()))
		case 'A':
			b.WriteString(modeString(info.Mode()))
		case 'F':
			b.WriteString(fileTypeName(info.Mode(), info.Size()))
		case 'u':
			b.WriteString(strconv.Itoa(uid))
		case 'U':
			b.WriteString(inv.sh.userName(uid))
		case 'g':
			b.WriteString(strconv.Itoa(gid))
		case 'G':
			b.WriteString(inv.sh.groupName(gid))
		case 'Y':
			b.WriteString(strconv.FormatInt(info.ModTime().Unix(), 10))
		case 'y':
			b.WriteString(info.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700"))
		case 'b':
			b.WriteString(strconv.FormatInt((info.Size()+511)/512, 10))
		case 'h':
			b.WriteString("1")
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func bChmod(_ context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	recursive := false
	for len(args) > 0 && (args[0] == "-R" || args[0] == "-v" || args[0] == "-f" || args[0] == "--") {
		if args[0] == "-R" {
			recursive = true
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return inv.Errorf("missing operand")
	}
	spec := args[0]
	status := 0
	var apply func(p, shown string)
	apply = func(p, shown string) {
		info, err := inv.FS.Stat(p)
		if err != nil {
			status = inv.Errorf("cannot access '%s': %s", shown, errnoText(unwrapPathErr(err)))
			return
		}
		mode, ok := parseChmod(spec, info.Mode())
		if !ok {
			status = inv.Errorf("invalid mode: '%s'", spec)
			return
		}
		_ = inv.FS.Chmod(p, mode)
		if recursive && info.IsDir() {
			ents, _ := inv.FS.ReadDir(p)
			for _, e := range ents {
				if e.Type()&fs.ModeSymlink == 0 {
					apply(path.Join(p, e.Name()), path.Join(shown, e.Name()))
				}
			}
		}
	}
	for _, a := range args[1:] {
		apply(inv.Abs(a), a)
	}
	return status
}

// parseChmod applies an octal or symbolic chmod spec to the current mode.
func parseChmod(spec string, cur fs.FileMode) (fs.FileMode, bool) {
	if v, err := strconv.ParseUint(spec, 8, 32); err == nil {
		m := fs.FileMode(v & 0o777)
		if v&0o4000 != 0 {
			m |= fs.ModeSetuid
		}
		if v&0o2000 != 0 {
			m |= fs.ModeSetgid
		}
		if v&0o1000 != 0 {
			m |= fs.ModeSticky
		}
		return m, true
	}
	mode := cur & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid)
	for _, clause := range strings.Split(spec, ",") {
		i := 0
		var who fs.FileMode
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			switch clause[i] {
			case 'u':
				who |= 0o700
			case 'g':
				who |= 0o070
			case 'o':
				who |= 0o007
			case 'a':
				who |= 0o777
			}
			i++
		}
		if who == 0 {
			who = 0o777 &^ umask
			if i < len(clause) && clause[i] == '=' {
				who = 0o777
			}
		}
		if i >= len(clause) || strings.IndexByte("+-=", clause[i]) < 0 {
			return 0, false
		}
		op := clause[i]
		var bits fs.FileMode
		for _, c := range clause[i+1:] {
			switch c {
			case 'r':
				bits |= 0o444
			case 'w':
				bits |= 0o222
			case 'x':
				bits |= 0o111
			case 'X':
				if cur.IsDir() || cur&0o111 != 0 {
					bits |= 0o111
				}
			case 't':
				mode |= fs.ModeSticky
			case 's':
			default:
				return 0, false
			}
		}
		switch op {
		case '+':
			mode |= bits & who
		case '-':
			mode &^= bits & who
		case '=':
			mode = mode&^who | bits&who
		}
	}
	return mode, true
}

func bMktemp(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "dqtu", "p")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	tmpl := "tmp.XXXXXXXXXX"
	if len(args) > 0 {
		tmpl = args[0]
	}
	dir := ""
	if o.has('p') {
		dir = o.val['p']
	} else if len(args) == 0 || o.has('t') {
		dir = "/tmp"
	}
	n := len(tmpl) - len(strings.TrimRight(tmpl, "X"))
	if n < 3 {
		return inv.Errorf("too few X's in template '%s'", tmpl)
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for range 100 {
		rnd := make([]byte, n)
		_, _ = rand.Read(rnd)
		for i := range rnd {
			rnd[i] = letters[int(rnd[i])%len(letters)]
		}
		name := tmpl[:len(tmpl)-n] + string(rnd)
		if dir != "" {
			name = path.Join(dir, name)
		}
		p := inv.Abs(name)
		if o.has('d') {
			err = inv.FS.MkdirAllAs(path.Dir(p), 0o755, inv.UID, inv.GID)
			if err == nil {
				err = inv.FS.MkdirAs(p, 0o700, inv.UID, inv.GID)
			}
		} else {
			var f *File
			f, err = inv.FS.OpenFileAs(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600, inv.UID, inv.GID)
			if err == nil {
				f.Close()
			}
		}
		if err == nil {
			fmt.Fprintln(inv.Stdout, name)
			return 0
		}
		if !isErrno(err, syscall.EEXIST) {
			break
		}
	}
	return inv.Errorf("failed to create file via template '%s': %s", tmpl, errnoText(unwrapPathErr(err)))
}

func bReadlink(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "fenmqsvz", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	status := 0
	for _, a := range args {
		p := inv.Abs(a)
		var out string
		if o.has('f') || o.has('e') || o.has('m') {
			out, err = canonical(inv, p, o.has('e'), o.has('m'))
		} else {
			out, err = inv.FS.Readlink(p)
		}
		if err != nil {
			status = 1
			continue
		}
		fmt.Fprint(inv.Stdout, out)
		if !o.has('n') {
			fmt.Fprintln(inv.Stdout)
		}
	}
	return status
}

// canonical resolves p: all components must exist with mustExist, the last
// may be missing by default (readlink -f), any may be missing with missingOK.
func canonical(inv *Invocation, p string, mustExist, missingOK bool) (string, error) {
	if real, err := inv.FS.RealPath(p); err == nil {
		return real, nil
	} else if mustExist {
		return "", err
	}
	dir, base := path.Split(p)
	real, err := inv.FS.RealPath(dir)
	if err != nil {
		if !missingOK {
			return "", err
		}
		return p, nil
	}
	return path.Join(real, base), nil
}

func bRealpath(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "emsqz", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 {
		return inv.Errorf("missing operand")
	}
	status := 0
	for _, a := range args {
		p := inv.Abs(a)
		var out string
		if o.has('s') {
			out = p
		} else if out, err = canonical(inv, p, o.has('e'), o.has('m')); err != nil {
			status = inv.Errorf("%s: %s", a, errnoText(unwrapPathErr(err)))
			continue
		}
		fmt.Fprintln(inv.Stdout, out)
	}
	return status
}
