package fakeenvd

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

func bBasename(_ context.Context, inv *Invocation) int {
	o, args, err := getopt(inv.Args[1:], "az", "s")
	if err != nil {
		return inv.Errorf("%v", err)
	}
	if len(args) == 0 {
		return inv.Errorf("missing operand")
	}
	suffix := o.val['s']
	if !o.has('a') && !o.has('s') && len(args) == 2 {
		suffix, args = args[1], args[:1]
	}
	for _, a := range args {
		b := path.Base(a)
		if a == "" {
			b = ""
		}
		if suffix != "" && b != suffix {
			b = strings.TrimSuffix(b, suffix)
		}
		fmt.Fprintln(inv.Stdout, b)
	}
	return 0
}

func bDirname(_ context.Context, inv *Invocation) int {
	if len(inv.Args) < 2 {
		return inv.Errorf("missing operand")
	}
	for _, a := range inv.Args[1:] {
		d := path.Dir(strings.TrimRight(a, "/"))
		if strings.Trim(a, "/") == "" && a != "" {
			d = "/"
		}
		fmt.Fprintln(inv.Stdout, d)
	}
	return 0
}

// strftime expands the common date(1) conversions.
func strftime(f string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			b.WriteString(t.Format("06"))
		case 'm':
			b.WriteString(t.Format("01"))
		case 'd':
			b.WriteString(t.Format("02"))
		case 'e':
			b.WriteString(t.Format("_2"))
		case 'H':
			b.WriteString(t.Format("15"))
		case 'I':
			b.WriteString(t.Format("03"))
		case 'M':
			b.WriteString(t.Format("04"))
		case 'S':
			b.WriteString(t.Format("05"))
		case 'N':
			fmt.Fprintf(&b, "%09d", t.Nanosecond())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'u':
			b.WriteString(strconv.Itoa((int(t.Weekday())+6)%7 + 1))
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'c':
			b.WriteString(t.Format("Mon Jan _2 15:04:05 2006"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

func bDate(_ context.Context, inv *Invocation) int {
	t := time.Now().UTC()
	format := "%a %b %e %H:%M:%S %Z %Y"
	args := inv.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "+"):
			format = a[1:]
		case a == "-u" || a == "--utc" || a == "-R":
			if a == "-R" {
				format = "%a, %d %b %Y %H:%M:%S %z"
			}
		case a == "-d" && i+1 < len(args), strings.HasPrefix(a, "--date="):
			v := strings.TrimPrefix(a, "--date=")
			if a == "-d" {
				v = args[i+1]
				i++
			}
			parsed, ok := parseDate(v, t)
			if !ok {
				return inv.Errorf("invalid date '%s'", v)
			}
			t = parsed
		case strings.HasPrefix(a, "-I") || strings.HasPrefix(a, "--iso-8601"):
			spec := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(a, "--iso-8601"), "="), "-I")
			switch spec {
			case "", "date":
				format = "%Y-%m-%d"
			case "seconds":
				format = "%Y-%m-%dT%H:%M:%S%:z"
			default:
				format = "%Y-%m-%dT%H:%M:%S%:z"
			}
		default:
			return inv.Errorf("invalid date '%s'", a)
		}
	}
	format = strings.ReplaceAll(format, "%:z", t.Format("-07:00"))
	fmt.Fprintln(inv.Stdout, strftime(format, t))
	return 0
}

// parseDate understands "@epoch", "now" and RFC 3339 / ISO dates.
func parseDate(v string, now time.Time) (time.Time, bool) {
	if v == "now" || v == "" {
		return now, true
	}
	if s, ok := strings.CutPrefix(v, "@"); ok {
		sec, err := strconv.ParseInt(s, 10, 64)
		return time.Unix(sec, 0).UTC(), err == nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}
