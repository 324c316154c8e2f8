package evidence

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces a secret value in a bundle.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest value a [Redactor] accepts: shorter ones
// would match ordinary text.
const MinSecretLen = 6

// pattern is one kind of secret recognised by its shape.
type pattern struct {
	name string
	re   *regexp.Regexp
	// repl is the regexp replacement template; it never matches re again.
	repl string
	// hints are lowercase literals one of which every match contains: data
	// without any of them is not searched (big base64 payloads are cheap).
	hints []string
}

// patterns are the secret shapes redacted from, and looked for in, every
// file. A value already replaced by [Redacted] does not match any of them
// (none of their value classes contains '[').
var patterns = []pattern{
	// E2B API keys and the deprecated access tokens.
	{"e2b-api-key", regexp.MustCompile(`e2b_[0-9a-fA-F]{8,}`), "e2b_" + Redacted, []string{"e2b_"}},
	{"e2b-access-token", regexp.MustCompile(`sk_e2b_[A-Za-z0-9]{8,}`), "sk_e2b_" + Redacted, []string{"sk_e2b_"}},
	// Bearer credentials, in headers or in prose (16 characters or more,
	// so that "Bearer authentication" is not one).
	{"bearer-token", regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/-]{16,}=*`), "${1}" + Redacted, []string{"bearer"}},
	// Credential headers, as "Name: value", "name=value" or JSON members
	// (also inside JSON strings, where the quotes are escaped).
	{"credential-header", regexp.MustCompile(`(?i)\b((?:x-api-key|x-access-token|e2b-traffic-access-token|x-traffic-access-token|proxy-authorization)\\?"?\s*[:=]\s*\\?"?)[A-Za-z0-9._~+/=-]{6,}`), "${1}" + Redacted,
		[]string{"x-api-key", "access-token", "proxy-authorization"}},
	// JSON members that carry tokens, keys or account identifiers.
	{"token-field", regexp.MustCompile(`(?i)(\\?"(?:envdAccessToken|trafficAccessToken|accessToken|access_token|apiKey|api_key|clientID|client_id|password|secret)\\?"\s*:\s*\\?")[^"\\\[][^"\\]*`), "${1}" + Redacted,
		[]string{"accesstoken", "access_token", "apikey", "api_key", "clientid", "client_id", "password", "secret"}},
	// URLs with user information.
	{"url-credentials", regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s:@"'<>\[\]]+:[^/\s@"'<>\[\]]+@`), "${1}" + Redacted + "@", []string{"://"}},
	// The fake provider's canaries ("canary-<kind>-<hex>", and the dash-free
	// "canary<kind><hex>" of client IDs): a loopback run must not carry them
	// into a bundle either.
	{"fake-canary", regexp.MustCompile(`(?i)canary-?[a-z]+-?[0-9a-f]{8,}`), Redacted, []string{"canary"}},
	// Private keys.
	{"private-key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`), Redacted, []string{"private key-----"}},
}

// applies reports whether data (folded) may match the pattern.
func (p pattern) applies(folded string) bool {
	for _, h := range p.hints {
		if strings.Contains(folded, h) {
			return true
		}
	}
	return false
}

// Redactor removes secrets from bundle files: known values (every API key,
// access token and sandbox domain a run saw) and the shapes of [patterns].
// It is safe for concurrent use. Known values are found through an index
// of their first bytes, so thousands of values cost one pass over the data.
type Redactor struct {
	mu     sync.Mutex
	values map[string]bool
	idx    *valueIndex // of the values, ASCII case folded; nil when stale
	b64    *valueIndex // of their base64 forms; nil when stale
}

// NewRedactor returns a Redactor that knows the given secret values.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{values: map[string]bool{}}
	r.Add(secrets...)
	return r
}

// Add teaches the Redactor more secret values. Values shorter than
// [MinSecretLen] (after trimming space) are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinSecretLen || r.values[s] {
			continue
		}
		r.values[s] = true
		r.idx, r.b64 = nil, nil
	}
}

// Len returns how many secret values the Redactor knows.
func (r *Redactor) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.values)
}

// indexes returns the value index and the base64 index, building them when
// values were added since.
func (r *Redactor) indexes() (*valueIndex, *valueIndex) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.idx == nil {
		vals := make([]string, 0, len(r.values))
		var forms []string
		for v := range r.values {
			vals = append(vals, foldASCII(v))
			forms = append(forms, base64Forms(v)...)
		}
		r.idx = newValueIndex(vals, MinSecretLen)
		r.b64 = newValueIndex(forms, 8)
	}
	return r.idx, r.b64
}

// Redact returns data with every known value (ignoring ASCII case) and
// every secret pattern replaced.
func (r *Redactor) Redact(data []byte) []byte {
	idx, _ := r.indexes()
	out := idx.replace(data, foldASCII(string(data)), []byte(Redacted))
	folded := foldASCII(string(out))
	for _, p := range patterns {
		if p.applies(folded) {
			out = p.re.ReplaceAll(out, []byte(p.repl))
		}
	}
	return out
}

// RedactString is [Redactor.Redact] for a string.
func (r *Redactor) RedactString(s string) string { return string(r.Redact([]byte(s))) }

// Scan reports what secret data still holds: a known value (ignoring ASCII
// case), a known value in base64 (standard or URL alphabet, at any
// alignment), or a secret pattern. The findings name the kind, never the
// secret.
func (r *Redactor) Scan(data []byte) []string {
	findings := ScanPatterns(data)
	idx, b64 := r.indexes()
	if n := idx.count(foldASCII(string(data))); n > 0 {
		findings = append(findings, fmt.Sprintf("%d known secret value(s)", n))
	}
	if n := b64.count(string(data)); n > 0 {
		findings = append(findings, fmt.Sprintf("%d known secret value(s), base64-encoded", n))
	}
	return findings
}

// valueIndex finds many literal needles in one pass: needles are grouped by
// their first k bytes, and each position of the text is looked up once.
type valueIndex struct {
	k     int
	byPre map[string][]string // longest first
}

func newValueIndex(needles []string, k int) *valueIndex {
	x := &valueIndex{k: k, byPre: map[string][]string{}}
	for _, n := range needles {
		if len(n) < k {
			continue
		}
		x.byPre[n[:k]] = append(x.byPre[n[:k]], n)
	}
	for _, list := range x.byPre {
		sort.Slice(list, func(i, j int) bool {
			if len(list[i]) != len(list[j]) {
				return len(list[i]) > len(list[j])
			}
			return list[i] < list[j]
		})
	}
	return x
}

// match returns the length of the longest needle at text[i:], or 0.
func (x *valueIndex) match(text string, i int) int {
	if i+x.k > len(text) {
		return 0
	}
	for _, n := range x.byPre[text[i:i+x.k]] {
		if strings.HasPrefix(text[i:], n) {
			return len(n)
		}
	}
	return 0
}

// replace returns data with every needle found in key (data's folded
// twin, of equal length) replaced by repl, leftmost-longest.
func (x *valueIndex) replace(data []byte, key string, repl []byte) []byte {
	if len(x.byPre) == 0 {
		return data
	}
	var out []byte
	last := 0
	for i := 0; i+x.k <= len(key); {
		if n := x.match(key, i); n > 0 {
			out = append(out, data[last:i]...)
			out = append(out, repl...)
			i += n
			last = i
			continue
		}
		i++
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// count returns how many distinct needles text holds.
func (x *valueIndex) count(text string) int {
	if len(x.byPre) == 0 {
		return 0
	}
	seen := map[string]bool{}
	for i := 0; i+x.k <= len(text); i++ {
		if n := x.match(text, i); n > 0 {
			seen[text[i:i+n]] = true
		}
	}
	return len(seen)
}

// foldASCII lowers ASCII letters only, so the result has data's length.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ScanPatterns reports which secret patterns data matches.
func ScanPatterns(data []byte) []string {
	var findings []string
	folded := foldASCII(string(data))
	for _, p := range patterns {
		if p.applies(folded) && p.re.Match(data) {
			findings = append(findings, "secret pattern "+p.name)
		}
	}
	return findings
}

// base64Forms returns substrings that appear in any base64 encoding of a
// text containing v, whatever v's offset: for each of the three alignments,
// the part of the encoding made of v's bytes alone.
func base64Forms(v string) []string {
	var forms []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := 0; k < 3; k++ {
			full := enc.EncodeToString(append(make([]byte, k), v...))
			start := 0
			if k > 0 {
				start = 4 // the first group mixes padding and v
			}
			end := (k + len(v)) / 3 * 4 // the last whole group
			if end-start >= 8 {
				forms = append(forms, full[start:end])
			}
		}
	}
	return forms
}
