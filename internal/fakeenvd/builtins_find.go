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
	fx, code, ok := parseFind(inv, args)
	if !ok {
		return code
	}
	for _, root := range roots {
		if !fx.walk(ctx, inv, root, inv.Abs(root), 0) {
			break
		}
	}
	if ctx.Err() != nil {
		return 1
	}
	return fx.status
}

// findExpr is a parsed find expression: the predicates (all must hold),
// the depth limits, and the exit status so far.
type findExpr struct {
	preds              []findPred
	maxDepth, minDepth int // maxDepth -1 = none
	status             int
}

// parseFind parses the expression after the roots; on a bad one it has
// reported the error and returns false with the status.
func parseFind(inv *Invocation, args []string) (*findExpr, int, bool) {
	fx := &findExpr{maxDepth: -1}
	negate := false
	add := func(p findPred) {
		if negate {
			q := p
			p = func(s string, i fs.FileInfo, d int) bool { return !q(s, i, d) }
			negate = false
		}
		fx.preds = append(fx.preds, p)
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
		case "-name", "-iname", "-path", "-wholename", "-type":
			v, ok := need()
			if !ok {
				return nil, inv.Errorf("missing argument to '%s'", a), false
			}
			if a == "-type" {
				add(findType(v))
			} else {
				add(findName(a, v))
			}
		case "-empty":
			add(findEmpty(inv))
		case "-maxdepth", "-mindepth":
			v, ok := need()
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 0 {
				return nil, inv.Errorf("invalid argument to %s", a), false
			}
			if a == "-maxdepth" {
				fx.maxDepth = n
			} else {
				fx.minDepth = n
			}
		default:
			return nil, inv.Errorf("unknown predicate '%s'", a), false
		}
	}
	return fx, 0, true
}

// findName is -name, -iname (case-folded), -path and -wholename (the
// whole path instead of the base name): a glob match.
func findName(pred, glob string) findPred {
	fold := pred == "-iname"
	if fold {
		glob = strings.ToLower(glob)
	}
	whole := pred == "-path" || pred == "-wholename"
	return func(p string, _ fs.FileInfo, _ int) bool {
		s := path.Base(p)
		if whole {
			s = p
		}
		if fold {
			s = strings.ToLower(s)
		}
		ok, _ := path.Match(glob, s)
		return ok
	}
}

// findType is -type with a comma-separated list of f, d, l and c.
func findType(types string) findPred {
	return func(_ string, info fs.FileInfo, _ int) bool {
		m := info.Mode()
		for _, t := range strings.Split(types, ",") {
			switch {
			case t == "f" && m.IsRegular(),
				t == "d" && m.IsDir(),
				t == "l" && m&fs.ModeSymlink != 0,
				t == "c" && m&fs.ModeCharDevice != 0:
				return true
			}
		}
		return false
	}
}

// findEmpty is -empty: an empty directory or an empty regular file.
func findEmpty(inv *Invocation) findPred {
	return func(p string, info fs.FileInfo, _ int) bool {
		if info.IsDir() {
			ents, err := inv.FS.ReadDir(p)
			return err == nil && len(ents) == 0
		}
		return info.Mode().IsRegular() && info.Size() == 0
	}
}

// walk prints shown (the path as given) when it matches and descends into
// directories within maxDepth; false means stop (cancelled or a failed
// write).
func (fx *findExpr) walk(ctx context.Context, inv *Invocation, shown, abs string, depth int) bool {
	if ctx.Err() != nil {
		return false
	}
	info, err := inv.FS.Lstat(abs)
	if err != nil {
		fx.status = inv.Errorf("'%s': %s", shown, errnoText(unwrapPathErr(err)))
		return true
	}
	match := depth >= fx.minDepth
	for _, p := range fx.preds {
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
	if !info.IsDir() || (fx.maxDepth >= 0 && depth >= fx.maxDepth) {
		return true
	}
	ents, err := inv.FS.ReadDir(abs)
	if err != nil {
		fx.status = inv.Errorf("'%s': %s", shown, errnoText(unwrapPathErr(err)))
		return true
	}
	for _, e := range ents {
		if !fx.walk(ctx, inv, strings.TrimSuffix(shown, "/")+"/"+e.Name(), path.Join(abs, e.Name()), depth+1) {
			return false
		}
	}
	return true
}
