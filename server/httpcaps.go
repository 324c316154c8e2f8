package server

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// httpCaps counts the live legacy HTTP sessions, per client and in all,
// for the session caps, and knows each by its Mcp-Session-Id. It has its
// own lock: nothing in it is held while a session closes.
type httpCaps struct {
	now    func() time.Time
	logger *slog.Logger
	// evict closes a session chosen to make room; it must not block.
	evict func(*session)

	mu   sync.Mutex
	byID map[string]*httpSlot
	// Live sessions (those bound to a client), per client and in all,
	// plus the new sessions being set up (see reserve).
	live          int
	clientLive    map[string]int
	pending       int
	clientPending map[string]int
}

// httpSlot is one HTTP session as the caps see it.
type httpSlot struct {
	sess *session
	// client is the client key while the session counts against the caps;
	// "" before bind and once evicted.
	client string
	// inflight counts the session's requests in progress, and lastActive
	// is when the last one began or ended: eviction picks the session idle
	// the longest.
	inflight   int
	lastActive time.Time
}

func newHTTPCaps(now func() time.Time, logger *slog.Logger, evict func(*session)) *httpCaps {
	return &httpCaps{now: now, logger: logger, evict: evict, byID: map[string]*httpSlot{},
		clientLive: map[string]int{}, clientPending: map[string]int{}}
}

// add knows session s by its Mcp-Session-Id; it counts once bound.
func (c *httpCaps) add(id string, s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id] = &httpSlot{sess: s, lastActive: c.now()}
}

// remove forgets the ended session s and stops counting it.
func (c *httpCaps) remove(id string, s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot, ok := c.byID[id]
	if !ok || slot.sess != s {
		return
	}
	c.uncountLocked(slot)
	delete(c.byID, id)
}

// uncountLocked stops counting slot against the caps.
func (c *httpCaps) uncountLocked(slot *httpSlot) {
	if slot.client == "" {
		return
	}
	c.live--
	if c.clientLive[slot.client]--; c.clientLive[slot.client] <= 0 {
		delete(c.clientLive, slot.client)
	}
	slot.client = ""
}

// reserve counts a new HTTP session of client that is being set up,
// unless that would exceed total live sessions in all or perClient for
// the client (a limit <= 0 is no limit). At a limit, the session idle the
// longest (for at least evictIdle; never when evictIdle < 0) among those
// the limit counts is closed to make room. It reports which limit refused.
func (c *httpCaps) reserve(client string, total, perClient int, evictIdle time.Duration) (ok bool, clientLimit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if perClient > 0 && c.clientLive[client]+c.clientPending[client] >= perClient {
		if !c.evictLocked(client, evictIdle) {
			return false, true
		}
	}
	if total > 0 && c.live+c.pending >= total {
		if !c.evictLocked("", evictIdle) && !c.evictFromLargestLocked(client, evictIdle) {
			return false, false
		}
	}
	c.pending++
	c.clientPending[client]++
	return true, false
}

// evictLocked closes the counted session (of client, or of anyone when
// client is "") that has been idle the longest, if one has been idle for
// evictIdle; it stops counting it at once. It scans the live sessions,
// which happens only when a limit is reached.
func (c *httpCaps) evictLocked(client string, evictIdle time.Duration) bool {
	if evictIdle < 0 {
		return false
	}
	cutoff := c.now().Add(-evictIdle)
	var victim *httpSlot
	for _, slot := range c.byID {
		if slot.client == "" || slot.inflight > 0 || (client != "" && slot.client != client) || slot.lastActive.After(cutoff) { // QUOTA-2
			continue
		}
		if victim == nil || slot.lastActive.Before(victim.lastActive) {
			victim = slot
		}
	}
	if victim == nil {
		return false
	}
	c.uncountLocked(victim)
	c.logger.Info("idle session closed to make room for a new one", "session", victim.sess.seq)
	c.evict(victim.sess)
	return true
}

// evictFromLargestLocked makes room at the server's cap when no session
// has been idle for evictIdle: it closes a session of the client that
// holds the most sessions without a request in flight, provided that
// client holds more than the newcomer, so a few clients that keep every
// session busy cannot lock the rest out (QUOTA-3). Among that client's
// sessions it picks the one idle longest, and never one with a request in
// flight (QUOTA-2). With evictIdle < 0 nothing is ever evicted.
func (c *httpCaps) evictFromLargestLocked(newcomer string, evictIdle time.Duration) bool {
	if evictIdle < 0 {
		return false
	}
	floor := c.clientLive[newcomer] + c.clientPending[newcomer]
	var victim *httpSlot
	for _, slot := range c.byID {
		n := c.clientLive[slot.client]
		if slot.client == "" || slot.inflight > 0 || n <= floor { // QUOTA-2
			continue
		}
		if victim == nil || n > c.clientLive[victim.client] ||
			(n == c.clientLive[victim.client] && slot.lastActive.Before(victim.lastActive)) {
			victim = slot
		}
	}
	if victim == nil {
		return false
	}
	held := c.clientLive[victim.client]
	c.uncountLocked(victim)
	c.logger.Info("session of the client holding the most closed to make room for another client", "session", victim.sess.seq, "client_sessions", held)
	c.evict(victim.sess)
	return true
}

// release ends a reservation of reserve.
func (c *httpCaps) release(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending--
	if c.clientPending[client]--; c.clientPending[client] <= 0 {
		delete(c.clientPending, client)
	}
}

// bind counts the live session with the Mcp-Session-Id id as one of
// client's, until it ends. A session that has already ended is not counted.
func (c *httpCaps) bind(id, client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot, ok := c.byID[id]
	if !ok || slot.client != "" {
		return
	}
	slot.client = client
	c.live++
	c.clientLive[client]++
}

// session returns the session with Mcp-Session-Id id.
func (c *httpCaps) session(id string) (*session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	return slot.sess, true
}

// active marks a request of the session id in progress; the returned func
// marks it done.
func (c *httpCaps) active(id string) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot, ok := c.byID[id]
	if !ok {
		return func() {}
	}
	slot.inflight++
	slot.lastActive = c.now()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		slot.inflight--
		slot.lastActive = c.now()
	}
}

// liveCount is the number of sessions the caps count.
func (c *httpCaps) liveCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// principalKeyPrefix starts the caps' key of an authenticated principal,
// which no address key can start with.
const principalKeyPrefix = "principal:"

// sessionKey is whom a new session counts against, and that one's cap: an
// authenticated principal (a token of --tokens-file or --token-env) by
// name, under MaxSessionsPerPrincipal; an anonymous caller (a tokenless
// loopback server's one local principal) by address, under
// MaxSessionsPerClient.
func sessionKey(r *http.Request, o HTTPOptions) (key string, limit int, principal bool) {
	if p := r.Header.Get(principalHeader); p != "" && p != LocalPrincipal {
		return principalKeyPrefix + p, o.MaxSessionsPerPrincipal, true
	}
	return clientKey(r, o.ClientIPHeader), o.MaxSessionsPerClient, false
}
