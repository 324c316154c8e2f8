package fakeenvd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// sysBuiltins are process, environment and shell commands.
func sysBuiltins() map[string]Builtin {
	return map[string]Builtin{
		"sleep": bSleep, "env": bEnv, "printenv": bPrintenv, "basename": bBasename,
		"dirname": bDirname, "date": bDate, "whoami": bWhoami, "id": bID, "uname": bUname,
		"hostname": bHostname, "which": bWhich, "xargs": bXargs, "timeout": bTimeout,
		"nohup": bNohup, "bash": bShell, "sh": bShell, "dash": bShell,
	}
}

// parseDuration parses sleep/timeout durations: a number with an optional
// s, m, h or d suffix.
func parseDuration(s string) (time.Duration, error) {
	mult := time.Second
	switch {
	case strings.HasSuffix(s, "s"):
		s = s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		s, mult = s[:len(s)-1], time.Minute
	case strings.HasSuffix(s, "h"):
		s, mult = s[:len(s)-1], time.Hour
	case strings.HasSuffix(s, "d"):
		s, mult = s[:len(s)-1], 24*time.Hour
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid time interval '%s'", s)
	}
	return time.Duration(v * float64(mult)), nil
}

func bSleep(ctx context.Context, inv *Invocation) int {
	if len(inv.Args) < 2 {
		return inv.Errorf("missing operand")
	}
	var total time.Duration
	for _, a := range inv.Args[1:] {
		if a == "infinity" {
			total = 1 << 62
			continue
		}
		d, err := parseDuration(a)
		if err != nil {
			return inv.Errorf("%v", err)
		}
		total += d
	}
	t := time.NewTimer(total)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-ctx.Done():
		return 1
	}
}

// splitXargs splits input into xargs items: blank-separated words with
// quotes and backslashes honoured.
func splitXargs(data []byte) ([]string, error) {
	var items []string
	var cur strings.Builder
	inItem := false
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\n' {
				return nil, errors.New("unmatched quote")
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inItem = c, true
		case c == '\\' && i+1 < len(data):
			i++
			cur.WriteByte(data[i])
			inItem = true
		case c == ' ' || c == '\t' || c == '\n':
			if inItem {
				items = append(items, cur.String())
				cur.Reset()
				inItem = false
			}
		default:
			cur.WriteByte(c)
			inItem = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unmatched quote")
	}
	if inItem {
		items = append(items, cur.String())
	}
	return items, nil
}

// xargsOpts are the options of one xargs.
type xargsOpts struct {
	maxArgs        int
	replace, delim string
	nul, noEmpty   bool
}

// parseXargs reads xargs's options and returns the command; on a bad
// option it has reported it and returns false with the status.
func parseXargs(inv *Invocation) (xargsOpts, []string, int, bool) {
	var x xargsOpts
	args := inv.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		switch {
		case a == "-0" || a == "--null":
			x.nul = true
		case a == "-r" || a == "--no-run-if-empty":
			x.noEmpty = true
		case a == "-n" && len(args) > 1:
			x.maxArgs, _ = strconv.Atoi(args[1])
			args = args[1:]
		case strings.HasPrefix(a, "-n") && len(a) > 2:
			x.maxArgs, _ = strconv.Atoi(a[2:])
		case a == "-I" && len(args) > 1:
			x.replace = args[1]
			args = args[1:]
		case strings.HasPrefix(a, "-I") && len(a) > 2:
			x.replace = a[2:]
		case a == "-d" && len(args) > 1:
			x.delim = args[1]
			args = args[1:]
		case a == "-t" || a == "-x":
		case a == "--":
			return x, orEcho(args[1:]), 0, true
		default:
			return x, nil, inv.Errorf("invalid option -- '%s'", strings.TrimLeft(a, "-")), false
		}
		args = args[1:]
	}
	return x, orEcho(args), 0, true
}

// orEcho is the command, or echo when none is given.
func orEcho(cmd []string) []string {
	if len(cmd) == 0 {
		return []string{"echo"}
	}
	return cmd
}

// items splits xargs's input as the options ask: NUL- or delimiter-
// separated, one per line with -I, else blank-separated with quotes.
func (x xargsOpts) items(data []byte) ([]string, error) {
	var items []string
	switch {
	case x.nul:
		items = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	case x.delim != "":
		d := strings.ReplaceAll(strings.ReplaceAll(x.delim, `\n`, "\n"), `\t`, "\t")
		items = strings.Split(strings.TrimSuffix(string(data), d), d)
	case x.replace != "":
		for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			if s := strings.TrimLeft(string(l), " \t"); s != "" {
				items = append(items, s)
			}
		}
	default:
		var err error
		if items, err = splitXargs(data); err != nil {
			return nil, err
		}
	}
	if len(items) == 1 && items[0] == "" && (x.nul || x.delim != "") {
		items = nil
	}
	return items, nil
}

func bXargs(ctx context.Context, inv *Invocation) int {
	x, args, code, ok := parseXargs(inv)
	if !ok {
		return code
	}
	data, err := inv.readAll(ctx, inv.Stdin)
	if err != nil {
		return readFail(inv, err)
	}
	items, err := x.items(data)
	if err != nil {
		return inv.Errorf("%v", err)
	}
	status := 0
	// run runs one command line; false means stop (GNU xargs stops on
	// status 255 and on a command that cannot run).
	run := func(cmd []string) bool {
		st := inv.Run(ctx, cmd)
		switch {
		case st == 255:
			status = 124
			return false
		case st == 126 || st == 127:
			status = st
			return false
		case st != 0:
			status = 123
		}
		return ctx.Err() == nil
	}
	switch {
	case x.replace != "":
		for _, it := range items {
			cmd := make([]string, len(args))
			for i, a := range args {
				cmd[i] = strings.ReplaceAll(a, x.replace, it)
			}
			if !run(cmd) {
				break
			}
		}
	case len(items) == 0:
		if !x.noEmpty {
			run(args)
		}
	default:
		batch := len(items)
		if x.maxArgs > 0 {
			batch = x.maxArgs
		}
		for len(items) > 0 {
			n := min(batch, len(items))
			cmd := append(append([]string{}, args...), items[:n]...)
			items = items[n:]
			if !run(cmd) {
				break
			}
		}
	}
	return status
}

func bTimeout(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		if (args[0] == "-s" || args[0] == "-k" || args[0] == "--signal" || args[0] == "--kill-after") && len(args) > 1 {
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return inv.Errorf("missing operand")
	}
	d, err := parseDuration(args[0])
	if err != nil {
		fmt.Fprintf(inv.Stderr, "timeout: %v\n", err)
		return 125
	}
	var cctx context.Context = ctx
	cancel := func() {}
	if d > 0 {
		cctx, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	st := inv.Run(cctx, args[1:])
	if ctx.Err() == nil && cctx.Err() != nil {
		return 124
	}
	return st
}

func bNohup(ctx context.Context, inv *Invocation) int {
	if len(inv.Args) < 2 {
		return inv.Errorf("missing operand")
	}
	return inv.Run(ctx, inv.Args[1:])
}

// bShell is bash/sh: -c SCRIPT [NAME [ARGS...]], a script file, or a
// script read from standard input.
func bShell(ctx context.Context, inv *Invocation) int {
	return inv.sh.runShellArgs(ctx, inv)
}

// readScript reads a whole script from r.
func readScript(ctx context.Context, inv *Invocation) (string, error) {
	data, err := inv.readAll(ctx, inv.Stdin)
	return string(data), err
}
