package fakeenvd

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

func bLs(ctx context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "laAR1dhrtSFCpG", "")
	if err != nil {
		fmt.Fprintf(inv.Stderr, "ls: %v\n", err)
		return 2
	}
	if len(args) == 0 {
		args = []string{"."}
	}
	status := 0
	var files []lsEntry
	var dirs []lsEntry
	for _, a := range args {
		p := inv.Abs(a)
		info, err := inv.FS.Stat(p)
		if err != nil || o.has('l') || o.has('d') {
			if li, lerr := inv.FS.Lstat(p); lerr == nil && (err != nil || li.Mode()&fs.ModeSymlink != 0) {
				info, err = li, nil
			}
		}
		if err != nil {
			fmt.Fprintf(inv.Stderr, "ls: cannot access '%s': %s\n", a, errnoText(unwrapPathErr(err)))
			status = 2
			continue
		}
		e := lsEntry{name: a, path: p, info: info}
		if info.IsDir() && !o.has('d') {
			dirs = append(dirs, e)
		} else {
			files = append(files, e)
		}
	}
	w := &errWriter{w: inv.Stdout}
	lsSort(files, o)
	lsPrint(w, inv, files, o, false)
	lsSort(dirs, o)
	header := len(args) > 1 || o.has('R')
	for i, d := range dirs {
		if ctx.Err() != nil {
			return 1
		}
		if i > 0 || len(files) > 0 {
			fmt.Fprintln(w)
		}
		if st := lsDir(ctx, w, inv, d, o, header); st != 0 {
			status = max(status, st)
		}
	}
	if w.err != nil {
		return writeErr(inv, w.err)
	}
	return status
}

// lsEntry is one line of ls output.
type lsEntry struct {
	name string // as shown
	path string // absolute
	info fs.FileInfo
}

// lsDir lists one directory (and its subdirectories with -R).
func lsDir(ctx context.Context, w io.Writer, inv *Invocation, d lsEntry, o opts, header bool) int {
	if header {
		fmt.Fprintf(w, "%s:\n", d.name)
	}
	ents, err := inv.FS.ReadDir(d.path)
	if err != nil {
		fmt.Fprintf(inv.Stderr, "ls: cannot open directory '%s': %s\n", d.name, errnoText(unwrapPathErr(err)))
		return 2
	}
	var list []lsEntry
	if o.has('a') {
		for _, dot := range []string{".", ".."} {
			if info, err := inv.FS.Stat(path.Join(d.path, dot)); err == nil {
				list = append(list, lsEntry{name: dot, path: path.Join(d.path, dot), info: renamed{info, dot}})
			}
		}
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && !o.has('a') && !o.has('A') {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		list = append(list, lsEntry{name: e.Name(), path: path.Join(d.path, e.Name()), info: info})
	}
	lsSort(list, o)
	lsPrint(w, inv, list, o, true)
	status := 0
	if o.has('R') {
		for _, e := range list {
			if ctx.Err() != nil {
				return 1
			}
			if !e.info.IsDir() || e.name == "." || e.name == ".." {
				continue
			}
			fmt.Fprintln(w)
			sub := lsEntry{name: strings.TrimSuffix(d.name, "/") + "/" + e.name, path: e.path, info: e.info}
			status = max(status, lsDir(ctx, w, inv, sub, o, true))
		}
	}
	return status
}

// renamed overrides the name of a FileInfo ("." and "..").
type renamed struct {
	fs.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

func lsSort(list []lsEntry, o opts) {
	less := func(a, b lsEntry) int { return strings.Compare(a.name, b.name) }
	switch {
	case o.has('t'):
		less = func(a, b lsEntry) int {
			if c := b.info.ModTime().Compare(a.info.ModTime()); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		}
	case o.has('S'):
		less = func(a, b lsEntry) int {
			if a.info.Size() != b.info.Size() {
				return int(min(max(b.info.Size()-a.info.Size(), -1), 1))
			}
			return strings.Compare(a.name, b.name)
		}
	}
	slices.SortStableFunc(list, less)
	if o.has('r') {
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	}
}

func lsPrint(w io.Writer, inv *Invocation, list []lsEntry, o opts, inDir bool) {
	if len(list) == 0 {
		return
	}
	suffix := func(e lsEntry) string {
		if !o.has('F') && !o.has('p') {
			return ""
		}
		switch m := e.info.Mode(); {
		case m.IsDir():
			return "/"
		case o.has('p'):
			return ""
		case m&fs.ModeSymlink != 0:
			return "@"
		case m&0o111 != 0:
			return "*"
		}
		return ""
	}
	if !o.has('l') {
		for _, e := range list {
			fmt.Fprintf(w, "%s%s\n", e.name, suffix(e))
		}
		return
	}
	if inDir {
		var blocks int64
		for _, e := range list {
			blocks += (e.info.Size() + 4095) / 4096 * 4
		}
		if o.has('h') {
			fmt.Fprintf(w, "total %s\n", humanSize(blocks*1024))
		} else {
			fmt.Fprintf(w, "total %d\n", blocks)
		}
	}
	sizes := make([]string, len(list))
	owners := make([]string, len(list))
	groups := make([]string, len(list))
	var sw, ow, gw int
	for i, e := range list {
		if o.has('h') {
			sizes[i] = humanSize(e.info.Size())
		} else {
			sizes[i] = strconv.FormatInt(e.info.Size(), 10)
		}
		uid, gid := ownerIDs(e.info)
		owners[i], groups[i] = inv.sh.userName(uid), inv.sh.groupName(gid)
		sw, ow, gw = max(sw, len(sizes[i])), max(ow, len(owners[i])), max(gw, len(groups[i]))
	}
	now := time.Now()
	for i, e := range list {
		links := 1
		if e.info.IsDir() {
			links = 2
		}
		mt := e.info.ModTime().UTC()
		stamp := mt.Format("Jan _2 15:04")
		if now.Sub(mt) > 180*24*time.Hour || mt.After(now.Add(time.Hour)) {
			stamp = mt.Format("Jan _2  2006")
		}
		name := e.name + suffix(e)
		if e.info.Mode()&fs.ModeSymlink != 0 {
			if t, err := inv.FS.Readlink(e.path); err == nil {
				name += " -> " + t
			}
		}
		fmt.Fprintf(w, "%s %d %-*s %-*s %*s %s %s\n", modeString(e.info.Mode()), links,
			ow, owners[i], gw, groups[i], sw, sizes[i], stamp, name)
	}
}

// modeString renders a mode the way ls -l does ("drwxrwxrwt", "lrwxrwxrwx").
func modeString(m fs.FileMode) string {
	b := []byte("-rwxrwxrwx")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	special := func(bit fs.FileMode, pos int, set, unset byte) {
		if m&bit != 0 {
			if b[pos] == '-' {
				b[pos] = unset
			} else {
				b[pos] = set
			}
		}
	}
	special(fs.ModeSetuid, 3, 's', 'S')
	special(fs.ModeSetgid, 6, 's', 'S')
	special(fs.ModeSticky, 9, 't', 'T')
	return string(b)
}

// octalMode renders the permission bits like stat %a.
func octalMode(m fs.FileMode) string {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return strconv.FormatUint(uint64(v), 8)
}

func humanSize(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f%c", f, units[i])
	}
	return fmt.Sprintf("%.0f%c", f, units[i])
}
