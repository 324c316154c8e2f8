package fakecodeinterp

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
)

// translateFStrings rewrites each single-line f-string (f"..." or f'...')
// into a str.format call, which Starlark has: f"{x} and {y:.2f}" becomes
// ("{} and {}".format((x), __fmt__((y), ".2f"))). Other string literals,
// triple-quoted ones included, and comments are copied unchanged. An
// f-string it cannot rewrite (triple-quoted, raw, or with a "{x=}"
// specifier) stays, and Starlark's parser then rejects it.
func translateFStrings(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			b.WriteString(src[i : i+end])
			i += end
		case (c == 'f' || c == 'F') && i+1 < len(src) && (src[i+1] == '"' || src[i+1] == '\'') && !identByte(src, i-1):
			out, n, ok := rewriteFString(src[i+1:])
			if !ok {
				b.WriteByte(c)
				i++
				continue
			}
			b.WriteString(out)
			i += 1 + n
		case c == '"' || c == '\'':
			n := stringLiteralLen(src[i:])
			b.WriteString(src[i : i+n])
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func identByte(s string, i int) bool {
	if i < 0 {
		return false
	}
	c := s[i]
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// stringLiteralLen returns the length of the string literal at the start
// of s (single or triple quoted), or of the rest of the line if it is not
// closed.
func stringLiteralLen(s string) int {
	q := s[:1]
	if strings.HasPrefix(s, q+q+q) {
		if end := strings.Index(s[3:], q+q+q); end >= 0 {
			return 3 + end + 3
		}
		return len(s)
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\n':
			return i
		case q[0]:
			return i + 1
		}
	}
	return len(s)
}

// rewriteFString rewrites the f-string whose quote starts s and returns the
// replacement and the number of bytes of s it consumed.
func rewriteFString(s string) (string, int, bool) {
	q := s[0]
	if len(s) >= 3 && s[1] == q && s[2] == q {
		return "", 0, false // triple-quoted: left to the parser
	}
	var lit strings.Builder
	var args []string
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			return "", 0, false
		case c == '\\':
			if i+1 < len(s) {
				lit.WriteString(s[i : i+2])
			}
			i++
		case c == q:
			out := fmt.Sprintf("(%c%s%c.format(%s))", q, lit.String(), q, strings.Join(args, ", "))
			return out, i + 1, true
		case c == '{' && i+1 < len(s) && s[i+1] == '{', c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteString(s[i : i+2])
			i++
		case c == '{':
			end, ok := replacementEnd(s, i+1, q)
			if !ok {
				return "", 0, false
			}
			placeholder, arg, ok := replacementField(s[i+1 : end])
			if !ok {
				return "", 0, false
			}
			lit.WriteString(placeholder)
			args = append(args, arg)
			i = end
		default:
			lit.WriteByte(c)
		}
	}
	return "", 0, false
}

// replacementEnd returns the index of the '}' closing the field that
// starts at i, skipping nested brackets and strings of the other quote.
func replacementEnd(s string, i int, q byte) (int, bool) {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']':
			depth--
		case '}':
			if depth == 0 {
				return i, true
			}
			depth--
		case '"', '\'':
			if c == q {
				return 0, false
			}
			n := stringLiteralLen(s[i:])
			i += n - 1
		case '\n':
			return 0, false
		}
	}
	return 0, false
}

// replacementField splits "expr!r:spec" into the format placeholder and
// the argument expression.
func replacementField(field string) (string, string, bool) {
	expr, conv, spec := field, "", ""
	depth := 0
	for i := 0; i < len(field); i++ {
		switch c := field[i]; {
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && c == '!' && i+1 < len(field) && strings.ContainsRune("rsa", rune(field[i+1])) && (i+2 == len(field) || field[i+2] == ':'):
			expr, conv = field[:i], field[i+1:i+2]
			if i+2 < len(field) {
				spec = field[i+3:]
			}
			i = len(field)
		case depth == 0 && c == ':':
			expr, spec = field[:i], field[i+1:]
			i = len(field)
		}
	}
	expr = strings.TrimSpace(expr)
	if expr == "" || strings.HasSuffix(expr, "=") && !strings.HasSuffix(expr, "==") {
		return "", "", false
	}
	arg := "(" + expr + ")"
	switch {
	case conv == "r" || conv == "a":
		arg = "repr" + arg
	case spec == "":
		arg = "__str__" + arg // Python's str(), not Starlark's double-quoted repr inside containers
	}
	if spec != "" {
		return "{}", fmt.Sprintf("__fmt__(%s, %q)", arg, spec), true
	}
	return "{}", arg, true
}

// formatSpecRE is Python's format-spec mini-language.
var formatSpecRE = regexp.MustCompile(`^(?:(.)?([<>^=]))?([+\- ])?(0)?(\d+)?([,_])?(?:\.(\d+))?([bcdeEfFgGnosxX%])?$`)

// pyFormat is format(value, spec) for ints, floats and strings: fill,
// alignment, sign, zero padding, width, thousands separator, precision and
// the types b c d e E f F g G n o s x X %.
func pyFormat(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	var spec string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &v, &spec); err != nil {
		return nil, err
	}
	m := formatSpecRE.FindStringSubmatch(spec)
	if m == nil {
		return nil, &pyException{"ValueError", fmt.Sprintf("Invalid format specifier '%s'", spec)}
	}
	fill, align, sign, zero, width, group, prec, typ := m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]
	body, numeric, err := formatValue(v, sign, group, prec, typ)
	if err != nil {
		return nil, err
	}
	w, _ := strconv.Atoi(width)
	if fill == "" {
		fill = " "
		if zero != "" && numeric {
			fill, align = "0", "="
		}
	}
	if align == "" {
		align = "<"
		if numeric {
			align = ">"
		}
	}
	return starlark.String(pad(body, fill, align, w)), nil
}

func formatValue(v starlark.Value, sign, group, prec, typ string) (string, bool, error) {
	switch x := v.(type) {
	case starlark.String:
		s := string(x)
		if prec != "" {
			n, _ := strconv.Atoi(prec)
			if n < len(s) {
				s = s[:n]
			}
		}
		return s, false, nil
	case starlark.Int, starlark.Float:
		f, _ := starlark.AsFloat(x)
		i, isInt := x.(starlark.Int)
		var s string
		switch {
		case isInt && (typ == "" || typ == "d" || typ == "n"):
			s = i.String()
		case isInt && typ == "x", isInt && typ == "X", isInt && typ == "o", isInt && typ == "b":
			n, _ := i.Int64()
			s = strconv.FormatInt(n, map[string]int{"x": 16, "X": 16, "o": 8, "b": 2}[typ])
			if typ == "X" {
				s = strings.ToUpper(s)
			}
		default:
			s = formatFloat(f, prec, typ)
		}
		if group != "" {
			s = groupDigits(s, group)
		}
		if !strings.HasPrefix(s, "-") && (sign == "+" || sign == " ") && !math.IsNaN(f) {
			s = sign + s
		}
		return s, true, nil
	}
	return pyStr(v), false, nil
}

func formatFloat(f float64, prec, typ string) string {
	p := 6
	if prec != "" {
		p, _ = strconv.Atoi(prec)
	}
	switch typ {
	case "e", "E":
		s := strconv.FormatFloat(f, 'e', p, 64)
		if typ == "E" {
			s = strings.ToUpper(s)
		}
		return s
	case "%":
		return strconv.FormatFloat(f*100, 'f', p, 64) + "%"
	case "g", "G", "":
		if typ == "" && prec == "" {
			return starlark.Float(f).String()
		}
		return strconv.FormatFloat(f, 'g', p, 64)
	}
	return strconv.FormatFloat(f, 'f', p, 64)
}

// groupDigits inserts sep every three digits of the integer part of s.
func groupDigits(s, sep string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteString(sep)
		}
		b.WriteRune(c)
	}
	out := b.String()
	if hasFrac {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

func pad(s, fill, align string, width int) string {
	n := width - len([]rune(s))
	if n <= 0 {
		return s
	}
	switch align {
	case "<":
		return s + strings.Repeat(fill, n)
	case "^":
		return strings.Repeat(fill, n/2) + s + strings.Repeat(fill, n-n/2)
	case "=":
		if s != "" && strings.ContainsRune("+- ", rune(s[0])) {
			return s[:1] + strings.Repeat(fill, n) + s[1:]
		}
	}
	return strings.Repeat(fill, n) + s
}
