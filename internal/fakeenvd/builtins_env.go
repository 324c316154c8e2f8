package fakeenvd

import (
	"context"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/expand"
)

func bEnv(ctx context.Context, inv *Invocation) int {
	args := inv.Args[1:]
	vars := map[string]string{}
	var order []string
	clearEnv := false
	var unset []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "-i" || a == "-" || a == "--ignore-environment":
			clearEnv = true
		case a == "-u" && len(args) > 1:
			unset = append(unset, args[1])
			args = args[1:]
		case a == "--":
			args = args[1:]
			goto done
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			return inv.Errorf("invalid option -- '%s'", strings.TrimLeft(a, "-"))
		case strings.Contains(a, "="):
			k, v, _ := strings.Cut(a, "=")
			if _, ok := vars[k]; !ok {
				order = append(order, k)
			}
			vars[k] = v
		default:
			goto done
		}
		args = args[1:]
	}
done:
	var pairs []string
	if !clearEnv {
		for _, kv := range inv.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if _, ok := vars[k]; ok || contains(unset, k) {
				continue
			}
			pairs = append(pairs, kv)
		}
	}
	for _, k := range order {
		pairs = append(pairs, k+"="+vars[k])
	}
	if len(args) == 0 {
		for _, kv := range pairs {
			if _, err := fmt.Fprintln(inv.Stdout, kv); err != nil {
				return writeErr(inv, err)
			}
		}
		return 0
	}
	child := *inv
	child.env = expand.ListEnviron(pairs...)
	return child.Run(ctx, args)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func bPrintenv(_ context.Context, inv *Invocation) int {
	if len(inv.Args) == 1 {
		for _, kv := range inv.Environ() {
			fmt.Fprintln(inv.Stdout, kv)
		}
		return 0
	}
	status := 0
	for _, name := range inv.Args[1:] {
		vr := inv.env.Get(name)
		if !vr.IsSet() || !vr.Exported {
			status = 1
			continue
		}
		fmt.Fprintln(inv.Stdout, vr.String())
	}
	return status
}

func bWhoami(_ context.Context, inv *Invocation) int {
	fmt.Fprintln(inv.Stdout, inv.User)
	return 0
}

func bID(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "ugGnr", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) > 0 && args[0] != inv.User {
		return inv.Errorf("'%s': no such user", args[0])
	}
	group := inv.sh.groupName(inv.GID)
	switch {
	case o.has('u') && o.has('n'):
		fmt.Fprintln(inv.Stdout, inv.User)
	case o.has('u'):
		fmt.Fprintln(inv.Stdout, inv.UID)
	case (o.has('g') || o.has('G')) && o.has('n'):
		fmt.Fprintln(inv.Stdout, group)
	case o.has('g') || o.has('G'):
		fmt.Fprintln(inv.Stdout, inv.GID)
	default:
		fmt.Fprintf(inv.Stdout, "uid=%d(%s) gid=%d(%s) groups=%d(%s)\n", inv.UID, inv.User, inv.GID, group, inv.GID, group)
	}
	return 0
}

func bUname(_ context.Context, inv *Invocation) int {
	o, _, err := getopt(inv.Args[1:], "asnrvmpio", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	fields := []struct {
		flag byte
		val  string
	}{{'s', "Linux"}, {'n', Hostname}, {'r', "6.1.102"}, {'v', "#1 SMP PREEMPT_DYNAMIC"}, {'m', "x86_64"}, {'o', "GNU/Linux"}}
	var out []string
	for _, f := range fields {
		if o.has('a') || o.has(f.flag) {
			out = append(out, f.val)
		}
	}
	if len(out) == 0 {
		out = []string{"Linux"}
	}
	fmt.Fprintln(inv.Stdout, strings.Join(out, " "))
	return 0
}

func bHostname(_ context.Context, inv *Invocation) int {
	fmt.Fprintln(inv.Stdout, Hostname)
	return 0
}

func bWhich(_ context.Context, inv *Invocation) int {
	_, args, err := getopt(inv.Args[1:], "as", "")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	status := 0
	for _, name := range args {
		if p := inv.sh.whereIs(inv, name); p != "" {
			fmt.Fprintln(inv.Stdout, p)
		} else {
			status = 1
		}
	}
	return status
}
