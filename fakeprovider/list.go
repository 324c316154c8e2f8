package fakeprovider

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// List paging bounds of GET /v2/sandboxes.
const (
	listDefaultLimit = 100
	listMaxLimit     = 100
)

// listQuery is the parsed query of GET /v2/sandboxes.
type listQuery struct {
	running, paused bool
	metadata        map[string]string
	limit           int
	asc             bool
	template        string
	startedAfter    time.Time
	cursor          *listCursor
}

// listCursor is the position a nextToken names.
type listCursor struct {
	startedAt time.Time
	id        string
}

// encodeNextToken returns the nextToken for the page ending at s:
// base64url("<RFC3339Nano startedAt>__<sandboxID>"), plus "__asc" when the
// list runs oldest first, as E2B encodes it.
func encodeNextToken(s *sandboxRecord, asc bool) string {
	raw := s.startedAt.UTC().Format(time.RFC3339Nano) + "__" + s.id
	if asc {
		raw += "__asc"
	}
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// decodeNextToken parses a nextToken; both padded and unpadded base64url
// are accepted.
func decodeNextToken(tok string) (*listCursor, error) {
	raw, err := base64.URLEncoding.DecodeString(tok)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(tok)
	}
	if err != nil {
		return nil, fmt.Errorf("decode next token: %w", err)
	}
	parts := strings.Split(string(raw), "__")
	if len(parts) == 3 && parts[2] == "asc" {
		parts = parts[:2]
	}
	if len(parts) != 2 || !sandboxIDPattern.MatchString(parts[1]) {
		return nil, errors.New("next token: want <time>__<sandboxID>")
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return nil, fmt.Errorf("next token time: %w", err)
	}
	return &listCursor{startedAt: t, id: parts[1]}, nil
}

// parseMetadataFilter parses the metadata query value the way E2B's
// utils.parseFilters does: unescape the whole value, split on "&", require
// exactly one "=" per pair, unescape key and value.
func parseMetadataFilter(v string) (map[string]string, error) {
	query, err := url.QueryUnescape(v)
	if err != nil {
		return nil, fmt.Errorf("unescape metadata: %w", err)
	}
	filters := make(map[string]string)
	for _, pair := range strings.Split(query, "&") {
		kv := strings.Split(pair, "=")
		if len(kv) != 2 {
			return nil, fmt.Errorf("metadata pair %q: want exactly one '='", pair)
		}
		k, err := url.QueryUnescape(kv[0])
		if err != nil {
			return nil, fmt.Errorf("unescape metadata key: %w", err)
		}
		val, err := url.QueryUnescape(kv[1])
		if err != nil {
			return nil, fmt.Errorf("unescape metadata value: %w", err)
		}
		filters[k] = val
	}
	return filters, nil
}

// parseListQuery parses and validates the query, or answers 400 and
// returns false.
func (p *Provider) parseListQuery(w http.ResponseWriter, r *http.Request) (listQuery, bool) {
	q := r.URL.Query()
	lq := listQuery{limit: listDefaultLimit, running: true, paused: true}
	if v, ok := q["state"]; ok {
		lq.running, lq.paused = false, false
		for _, part := range strings.Split(strings.Join(v, ","), ",") {
			switch part {
			case "running":
				lq.running = true
			case "paused":
				lq.paused = true
			default:
				p.validationError(w, r, fmt.Sprintf(`parameter "state" in query has an error: value %q is not one of the allowed values ["running","paused"]`, part))
				return lq, false
			}
		}
	}
	if v := q.Get("metadata"); v != "" {
		m, err := parseMetadataFilter(v)
		if err != nil {
			p.writeError(w, r, http.StatusBadRequest, msgMetadataParse)
			return lq, false
		}
		lq.metadata = m
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		switch {
		case err != nil:
			p.validationError(w, r, fmt.Sprintf(`parameter "limit" in query has an error: value %s: an invalid integer: invalid syntax`, v[0]))
			return lq, false
		case n < 1:
			p.validationError(w, r, `parameter "limit" in query has an error: number must be at least 1`)
			return lq, false
		case n > listMaxLimit:
			p.validationError(w, r, fmt.Sprintf(`parameter "limit" in query has an error: number must be at most %d`, listMaxLimit))
			return lq, false
		}
		lq.limit = n
	}
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		lq.asc = true
	default:
		p.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Invalid order parameter: unknown order %q", o))
		return lq, false
	}
	lq.template = q.Get("template")
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			p.validationError(w, r, fmt.Sprintf(`parameter "startedAfter" in query has an error: %s`, err))
			return lq, false
		}
		lq.startedAfter = t
	}
	if v := q.Get("nextToken"); v != "" {
		c, err := decodeNextToken(v)
		if err != nil {
			p.writeError(w, r, http.StatusBadRequest, msgInvalidNextToken)
			return lq, false
		}
		lq.cursor = c
	}
	return lq, true
}

// matches reports whether s passes lq's filters (not the cursor).
func (lq *listQuery) matches(s *sandboxRecord) bool {
	if !s.state.visible() {
		return false
	}
	if st := s.state.wire(); (st == string(StateRunning) && !lq.running) || (st == string(StatePaused) && !lq.paused) {
		return false
	}
	if lq.template != "" && lq.template != s.templateID && lq.template != s.alias {
		return false
	}
	// At or after, compared in microseconds, as the platform's database
	// does (e2b-dev/infra packages/api/internal/handlers/sandboxes_list.go).
	if !lq.startedAfter.IsZero() && s.startedAt.Truncate(time.Microsecond).Before(lq.startedAfter.Truncate(time.Microsecond)) {
		return false
	}
	for k, v := range lq.metadata {
		if got, ok := s.metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// afterCursor reports whether s comes after the cursor in the list's order.
func (lq *listQuery) afterCursor(s *sandboxRecord) bool {
	if lq.cursor == nil {
		return true
	}
	c := s.startedAt.Compare(lq.cursor.startedAt)
	if c == 0 {
		c = strings.Compare(s.id, lq.cursor.id)
	}
	if lq.asc {
		return c > 0
	}
	return c < 0
}

// handleList serves GET /v2/sandboxes.
func (p *Provider) handleList(w http.ResponseWriter, r *http.Request) {
	lq, ok := p.parseListQuery(w, r)
	if !ok {
		return
	}
	var (
		items        []any
		next         string
		totalRunning int
	)
	p.update(func(time.Time) []Daemon {
		var rs []*sandboxRecord
		for _, s := range p.sandboxes {
			if s.state.visible() && s.state.wire() == string(StateRunning) {
				totalRunning++
			}
			if lq.matches(s) && lq.afterCursor(s) {
				rs = append(rs, s)
			}
		}
		sortRecords(rs)
		if !lq.asc {
			slices.Reverse(rs)
		}
		if len(rs) > lq.limit {
			rs = rs[:lq.limit]
			next = encodeNextToken(rs[len(rs)-1], lq.asc)
		}
		items = make([]any, 0, len(rs))
		for _, s := range rs {
			items = append(items, s.withOmissions(s.listedJSON()))
		}
		return nil
	})
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	if lq.running {
		w.Header().Set("X-Total-Running", strconv.Itoa(totalRunning))
	}
	p.writeJSON(w, http.StatusOK, items)
}
