package fakeenvd

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fsBuiltins are the commands that work on files.
func fsBuiltins() map[string]Builtin {
	return map[string]Builtin{
		"cat": bCat, "ls": bLs, "mkdir": bMkdir, "rm": bRm, "rmdir": bRmdir,
		"cp": bCp, "mv": bMv, "touch": bTouch, "ln": bLn, "stat": bStat,
		"find": bFind, "chmod": bChmod, "mktemp": bMktemp, "readlink": bReadlink,
		"realpath": bRealpath,
	}
}

func bCat(ctx context.Context, inv *Invocation) int {
	o, files, err := getopt(inv.Args[1:], "nuAevtsE", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	line := 0
	for _, name := range files {
		f, err := inv.Open(name)
		if err != nil {
			status = inv.Fail(err)
			continue
		}
		var werr, rerr error
		if o.has('n') {
			werr, rerr = eachLine(ctx, f, func(l []byte) error {
				line++
				_, err := fmt.Fprintf(inv.Stdout, "%6d\t%s", line, l)
				return err
			})
		} else {
			werr, rerr = copyOut(ctx, inv, f)
		}
		f.Close()
		if werr != nil {
			return writeErr(inv, werr)
		}
		if rerr != nil {
			status = inv.Errorf("%s: %s", name, errnoText(unwrapPathErr(rerr)))
		}
	}
	return status
}

func bMkdir(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "pv", "m")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 {
		return inv.Errorf("missing operand")
	}
	perm := fs.FileMode(0o777)
	if o.has('m') {
		v, err := strconv.ParseUint(o.val['m'], 8, 32)
		if err != nil {
			return inv.Errorf("invalid mode '%s'", o.val['m'])
		}
		perm = fs.FileMode(v)
	}
	status := 0
	for _, a := range args {
		p := inv.Abs(a)
		if o.has('p') {
			if info, err := inv.FS.Stat(p); err == nil && info.IsDir() {
				continue
			}
			err = inv.FS.MkdirAllAs(p, perm, inv.UID, inv.GID)
		} else {
			err = inv.FS.MkdirAs(p, perm, inv.UID, inv.GID)
		}
		if err != nil {
			status = inv.Errorf("cannot create directory '%s': %s", a, errnoText(unwrapPathErr(err)))
			continue
		}
		if o.has('m') {
			_ = inv.FS.Chmod(p, perm)
		}
		if o.has('v') {
			fmt.Fprintf(inv.Stdout, "mkdir: created directory '%s'\n", a)
		}
	}
	return status
}

func bRm(ctx context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "rRfdiIv", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 && !o.has('f') {
		return inv.Errorf("missing operand")
	}
	recursive := o.has('r') || o.has('R') || hasLong(o, "recursive")
	status := 0
	for _, a := range args {
		if ctx.Err() != nil {
			return 1
		}
		p := inv.Abs(a)
		if p == "/" {
			status = inv.Errorf("it is dangerous to operate recursively on '/'")
			continue
		}
		info, err := inv.FS.Lstat(p)
		if err != nil {
			if !o.has('f') {
				status = inv.Errorf("cannot remove '%s': %s", a, errnoText(unwrapPathErr(err)))
			}
			continue
		}
		switch {
		case info.IsDir() && recursive:
			err = inv.FS.RemoveAll(p)
		case info.IsDir() && !o.has('d'):
			err = &fs.PathError{Op: "remove", Path: p, Err: syscall.EISDIR}
		default:
			err = inv.FS.Remove(p)
		}
		if err != nil {
			status = inv.Errorf("cannot remove '%s': %s", a, errnoText(unwrapPathErr(err)))
			continue
		}
		if o.has('v') {
			fmt.Fprintf(inv.Stdout, "removed '%s'\n", a)
		}
	}
	return status
}

func hasLong(o opts, name string) bool { _, ok := o.long[name]; return ok }

func bRmdir(_ context.Context, inv *Invocation) int {
	_, args, err := getopt(inv.Args[1:], "pv", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 {
		return inv.Errorf("missing operand")
	}
	status := 0
	for _, a := range args {
		p := inv.Abs(a)
		info, err := inv.FS.Lstat(p)
		if err == nil && !info.IsDir() {
			err = &fs.PathError{Op: "rmdir", Path: p, Err: syscall.ENOTDIR}
		}
		if err == nil {
			err = inv.FS.Remove(p)
		}
		if err != nil {
			status = inv.Errorf("failed to remove '%s': %s", a, errnoText(unwrapPathErr(err)))
		}
	}
	return status
}

// targetFor returns where src goes for cp/mv: into dst when dst is a
// directory, else dst itself.
func targetFor(inv *Invocation, src, dst string, many bool) (string, error) {
	d := inv.Abs(dst)
	if info, err := inv.FS.Stat(d); err == nil && info.IsDir() {
		return path.Join(d, path.Base(inv.Abs(src))), nil
	}
	if many {
		return "", fmt.Errorf("target '%s' is not a directory", dst)
	}
	return d, nil
}

func bCp(ctx context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "rRafpPLnviuT", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) < 2 {
		return inv.Errorf("missing destination file operand after '%s'", strings.Join(args, " "))
	}
	recursive := o.has('r') || o.has('R') || o.has('a')
	srcs, dst := args[:len(args)-1], args[len(args)-1]
	status := 0
	for _, s := range srcs {
		sp := inv.Abs(s)
		info, err := inv.FS.Stat(sp)
		if err != nil {
			status = inv.Errorf("cannot stat '%s': %s", s, errnoText(unwrapPathErr(err)))
			continue
		}
		target, err := targetFor(inv, s, dst, len(srcs) > 1)
		if err != nil {
			return inv.Errorf("%v", err)
		}
		if info.IsDir() {
			if !recursive {
				status = inv.Errorf("-r not specified; omitting directory '%s'", s)
				continue
			}
			if target == sp || strings.HasPrefix(target, sp+"/") {
				status = inv.Errorf("cannot copy a directory, '%s', into itself, '%s'", s, target)
				continue
			}
		}
		if o.has('n') {
			if _, err := inv.FS.Lstat(target); err == nil {
				continue
			}
		}
		if err := copyTree(ctx, inv, sp, target, o.has('a') || o.has('p')); err != nil {
			status = inv.Errorf("%s", errText(err))
		}
	}
	return status
}

// copyTree copies src (file, directory or, below the top, symlink) to dst.
func copyTree(ctx context.Context, inv *Invocation, src, dst string, keep bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	info, err := inv.FS.Lstat(src)
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if info, err = inv.FS.Stat(src); err != nil || !info.IsDir() {
			t, err := inv.FS.Readlink(src)
			if err != nil {
				return err
			}
			_ = inv.FS.Remove(dst)
			return inv.FS.SymlinkAs(t, dst, inv.UID, inv.GID)
		}
	}
	if info.IsDir() {
		if err := inv.FS.MkdirAllAs(dst, info.Mode().Perm(), inv.UID, inv.GID); err != nil {
			return err
		}
		ents, err := inv.FS.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(ctx, inv, path.Join(src, e.Name()), path.Join(dst, e.Name()), keep); err != nil {
				return err
			}
		}
		if keep {
			_ = inv.FS.Chtimes(dst, info.ModTime())
		}
		return nil
	}
	in, err := inv.FS.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := inv.FS.OpenFileAs(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm(), inv.UID, inv.GID)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	out.Close()
	if keep {
		_ = inv.FS.Chmod(dst, info.Mode())
		_ = inv.FS.Chtimes(dst, info.ModTime())
	}
	return nil
}

func bMv(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "fivnuT", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) < 2 {
		return inv.Errorf("missing destination file operand after '%s'", strings.Join(args, " "))
	}
	srcs, dst := args[:len(args)-1], args[len(args)-1]
	status := 0
	for _, s := range srcs {
		sp := inv.Abs(s)
		if _, err := inv.FS.Lstat(sp); err != nil {
			status = inv.Errorf("cannot stat '%s': %s", s, errnoText(unwrapPathErr(err)))
			continue
		}
		target, err := targetFor(inv, s, dst, len(srcs) > 1)
		if err != nil {
			return inv.Errorf("%v", err)
		}
		if o.has('n') {
			if _, err := inv.FS.Lstat(target); err == nil {
				continue
			}
		}
		if err := inv.FS.Rename(sp, target); err != nil {
			if le, ok := err.(*os.LinkError); ok {
				status = inv.Errorf("cannot move '%s' to '%s': %s", s, dst, errnoText(le.Err))
			} else {
				status = inv.Errorf("cannot move '%s' to '%s': %s", s, dst, errnoText(unwrapPathErr(err)))
			}
		}
	}
	return status
}

func bTouch(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "cam", "dtr")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 {
		return inv.Errorf("missing file operand")
	}
	status := 0
	for _, a := range args {
		p := inv.Abs(a)
		if _, err := inv.FS.Stat(p); err == nil {
			_ = inv.FS.Chtimes(p, time.Now())
			continue
		}
		if o.has('c') {
			continue
		}
		f, err := inv.Create(a, 0, 0o666)
		if err != nil {
			status = inv.Errorf("cannot touch '%s': %s", a, errnoText(unwrapPathErr(err)))
			continue
		}
		f.Close()
	}
	return status
}

func bLn(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "sfnvT", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if !o.has('s') {
		return inv.Errorf("hard links are not supported in this sandbox; use ln -s")
	}
	if len(args) == 0 {
		return inv.Errorf("missing file operand")
	}
	if len(args) == 1 {
		args = append(args, path.Base(args[0]))
	}
	targets, dst := args[:len(args)-1], args[len(args)-1]
	status := 0
	for _, t := range targets {
		link := inv.Abs(dst)
		if info, err := inv.FS.Stat(link); err == nil && info.IsDir() && !o.has('n') && !o.has('T') {
			link = path.Join(link, path.Base(t))
		} else if len(targets) > 1 {
			return inv.Errorf("target '%s' is not a directory", dst)
		}
		if o.has('f') {
			if info, err := inv.FS.Lstat(link); err == nil && !info.IsDir() {
				_ = inv.FS.Remove(link)
			}
		}
		if err := inv.FS.SymlinkAs(t, link, inv.UID, inv.GID); err != nil {
			status = inv.Errorf("failed to create symbolic link '%s': %s", dst, errnoText(unwrapPathErr(err)))
		}
	}
	return status
}
