package fakeenvd

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// findPred is one test of a find expression.
type findPred func(p string, info fs.FileInfo, depth int) bool

func bFind(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	var roots []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "!" && args[0] != "(" {
		roots = append(roots, args[0])
		args = args[1:]
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	maxDepth, minDepth := -1, 0
	var preds []findPred
	negate := false
	add := func(p findPred) {
		if negate {
			q := p
			p = func(s string, i fs.FileInfo, d int) bool { return !q(s, i, d) }
			negate = false
		}
		preds = append(preds, p)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		need := func() (string, bool) {
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i], true
		}
		switch a {
		case "!", "-not":
			negate = !negate
		case "-a", "-and", "-print":
		case "-name", "-iname", "-path", "-wholename":
			v, ok := need()
			if !ok {
				return inv.Errorf("missing argument to '%s'", a)
			}
			fold := a == "-iname"
			if fold {
				v = strings.ToLower(v)
			}
			whole := a == "-path" || a == "-wholename"
			add(func(p string, _ fs.FileInfo, _ int) bool {
				s := path.Base(p)
				if whole {
					s = p
				}
				if fold {
					s = strings.ToLower(s)
				}
				ok, _ := path.Match(v, s)
				return ok
			})
		case "-type":
			v, ok := need()
			if !ok {
				return inv.Errorf("missing argument to '%s'", a)
			}
			add(func(_ string, info fs.FileInfo, _ int) bool {
				m := info.Mode()
				for _, t := range strings.Split(v, ",") {
					switch t {
					case "f":
						if m.IsRegular() {
							return true
						}
					case "d":
						if m.IsDir() {
							return true
						}
					case "l":
						if m&fs.ModeSymlink != 0 {
							return true
						}
					case "c":
						if m&fs.ModeCharDevice != 0 {
							return true
						}
					}
				}
				return false
			})
		case "-empty":
			add(func(p string, info fs.FileInfo, _ int) bool {
				if info.IsDir() {
					ents, err := inv.FS.ReadDir(p)
					return err == nil && len(ents) == 0
				}
				return info.Mode().IsRegular() && info.Size() == 0
			})
		case "-maxdepth", "-mindepth":
			v, ok := need()
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 0 {
				return inv.Errorf("invalid argument to %s", a)
			}
			if a == "-maxdepth" {
				maxDepth = n
			} else {
				minDepth = n
			}
		default:
			return inv.Errorf("unknown predicate '%s'", a)
		}
	}
	status := 0
	for _, root := range roots {
		var walk func(shown, abs string, depth int) bool
		walk = func(shown, abs string, depth int) bool {
			if ctx.Err() != nil {
				return false
			}
			info, err := inv.FS.Lstat(abs)
			if err != nil {
				status = inv.Errorf("'%s': %s", shown, errnoText(unwrapPathErr(err)))
				return true
			}
			match := depth >= minDepth
			for _, p := range preds {
				if !match {
					break
				}
				match = p(abs, info, depth)
			}
			if match {
				if _, err := fmt.Fprintln(inv.Stdout, shown); err != nil {
					return false
				}
			}
			if info.IsDir() && (maxDepth < 0 || depth < maxDepth) {
				ents, err := inv.FS.ReadDir(abs)
				if err != nil {
					status = inv.Errorf("'%s': %s", shown, errnoText(unwrapPathErr(err)))
					return true
				}
				for _, e := range ents {
					if !walk(strings.TrimSuffix(shown, "/")+"/"+e.Name(), path.Join(abs, e.Name()), depth+1) {
						return false
					}
				}
			}
			return true
		}
		if !walk(root, inv.Abs(root), 0) {
			break
		}
	}
	if ctx.Err() != nil {
		return 1
	}
	return status
}
