package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// minTokenLen is the shortest bearer token [ParseTokens] accepts.
const minTokenLen = 16

// ParseTokens reads a tokens file: the bearer tokens an HTTP server accepts
// and the principal each authenticates (HANDLE-1), for
// [HTTPOptions.Tokens]. Two forms are accepted:
//
//   - lines of "PRINCIPAL TOKEN" (blank lines and lines starting with '#'
//     are skipped);
//   - a JSON object {"PRINCIPAL": "TOKEN", ...}.
//
// A principal is 1 to 63 letters, digits, '.', '_' or '-' (it is written
// into sandbox metadata); a token has at least 16 characters and no
// whitespace. Principals and tokens must be unique. The result maps each
// token to its principal. Errors name the line or principal, never a token.
func ParseTokens(data []byte) (map[string]string, error) {
	byPrincipal := map[string]string{}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if err := json.Unmarshal(trimmed, &byPrincipal); err != nil {
			return nil, fmt.Errorf("tokens file: not a JSON object of principal to token")
		}
	} else if err := parseTokenLines(data, byPrincipal); err != nil {
		return nil, err
	}
	if len(byPrincipal) == 0 {
		return nil, fmt.Errorf("tokens file: no token")
	}
	out := make(map[string]string, len(byPrincipal))
	for p, tok := range byPrincipal {
		if err := ValidateInstance(p); err != nil {
			return nil, fmt.Errorf("tokens file: principal %q: want 1 to 63 letters, digits, '.', '_' or '-'", p)
		}
		if len(tok) < minTokenLen || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("tokens file: the token of %q must have at least %d characters and no whitespace", p, minTokenLen)
		}
		if other, dup := out[tok]; dup {
			return nil, fmt.Errorf("tokens file: %q and %q share a token", other, p)
		}
		out[tok] = p
	}
	return out, nil
}

// parseTokenLines reads "PRINCIPAL TOKEN" lines into byPrincipal.
func parseTokenLines(data []byte, byPrincipal map[string]string) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return fmt.Errorf("tokens file: line %d: want \"PRINCIPAL TOKEN\"", n)
		}
		if _, dup := byPrincipal[fields[0]]; dup {
			return fmt.Errorf("tokens file: line %d: principal %q listed twice", n, fields[0])
		}
		byPrincipal[fields[0]] = fields[1]
	}
	return sc.Err()
}
