package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"
)

// stashKey is the only member of the arguments the SDK sees for a
// tools/call whose arguments the HTTP front end or the stdio transport kept
// (see argStash).
const stashKey = "sandboxkit.stash"

// stashMinBytes is the smallest arguments value that is kept out of the
// SDK's copy of a request.
const stashMinBytes = 4 << 10

// argStash holds the arguments of large tools/call requests in flight over
// HTTP and over stdio (lineConn.stashArguments), outside the SDK. The SDK's session keeps the last request it handled
// after answering it (go-sdk v1.8.0: jsonrpc2 Connection.handleAsync
// reslices handlerQueue without clearing the handled element, so an idle
// session pins its last decoded message). The front end therefore hands
// the SDK the request with its arguments replaced by a token, and the tool
// handler takes the arguments from here: an idle session then pins only
// the envelope (at most MaxEnvelopeBytes), never an upload, and the upload
// is not copied by the SDK's decoders either.
type argStash struct {
	mu sync.Mutex
	m  map[string]stashEntry
}

type stashEntry struct {
	session string // the Mcp-Session-Id the request came with
	args    []byte
}

// put keeps args for a request of session and returns its token.
func (a *argStash) put(session string, args []byte) string {
	tok := randomHex(16)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]stashEntry{}
	}
	a.m[tok] = stashEntry{session: session, args: args}
	return tok
}

// take removes and returns the arguments of tok, if they belong to
// session.
func (a *argStash) take(tok, session string) ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[tok]
	if !ok || e.session != session {
		return nil, false
	}
	delete(a.m, tok)
	return e.args, true
}

// drop forgets tok (the request ended without its handler taking it).
func (a *argStash) drop(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, tok)
}

// stashToken reports whether arguments are a stash reference.
func stashToken(args json.RawMessage) (string, bool) {
	if len(args) > 200 || !bytes.Contains(args, []byte(stashKey)) {
		return "", false
	}
	var ref map[string]string
	if err := json.Unmarshal(args, &ref); err != nil || len(ref) != 1 {
		return "", false
	}
	tok, ok := ref[stashKey]
	return tok, ok
}

// sessionID is the Mcp-Session-Id of the request's session ("" on stdio).
func sessionID(req *mcp.CallToolRequest) string {
	if req.Session == nil {
		return ""
	}
	return req.Session.ID()
}

// byteBudget bounds the request bytes held in memory across the server.
type byteBudget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
}

// acquire reserves n bytes, waiting at most b.wait; it reports false when
// the budget stayed full.
func (b *byteBudget) acquire(ctx context.Context, n int64) bool {
	if b == nil || b.sem == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	return b.sem.Acquire(ctx, min(n, b.size)) == nil
}

func (b *byteBudget) release(n int64) {
	if b != nil && b.sem != nil {
		b.sem.Release(min(n, b.size))
	}
}

// smallBodyBytes is the size up to which a request does not wait for the
// byte budget: such requests are cheap, and must go through while uploads
// queue.
const smallBodyBytes = 64 << 10

// post is a POST read and checked by the front end, ready for the SDK.
type post struct {
	frame  *frame
	body   []byte // what the SDK is given
	held   int64  // bytes of the budget held until release
	budget *byteBudget
	stashd string // stash token, "" for none
}

// refusal is an answer the front end gives instead of the SDK.
type refusal struct {
	status int
	err    *frameError
	// retryAfter, when set, is sent as Retry-After (seconds).
	retryAfter int
}

// write answers the refusal as a JSON-RPC error.
func (rf *refusal) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	if rf.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(rf.retryAfter))
	}
	w.WriteHeader(rf.status)
	_, _ = w.Write(rf.err.response())
}

func tooLarge(limit int64, what string) *refusal {
	return &refusal{status: http.StatusRequestEntityTooLarge, err: &frameError{code: jsonrpc.CodeInvalidRequest,
		msg: "invalid request: " + what + " larger than " + strconv.FormatInt(limit, 10) + " bytes"}}
}

// readPost reads a POST body whole under the byte budget, checks it
// strictly (checkFrame) and against the size limits, and moves a large
// tools/call arguments value into the stash. The caller must call
// s.releasePost(p) when the SDK has answered.
func (s *Server) readPost(r *http.Request, o HTTPOptions, budget *byteBudget) (*post, *refusal) {
	n := r.ContentLength
	if n > o.MaxRequestBodyBytes {
		return nil, tooLarge(o.MaxRequestBodyBytes, "request body")
	}
	p := &post{}
	busy := func() (*post, *refusal) {
		s.releasePost(p)
		s.deps.Logger.Warn("request refused: bytes in flight at the server's budget", "budget", budget.size)
		return nil, &refusal{status: http.StatusServiceUnavailable, retryAfter: 2, err: &frameError{code: -32000,
			msg: "server busy: too many large requests in flight; retry shortly"}}
	}
	var body []byte
	var err error
	if n >= 0 {
		if n > smallBodyBytes {
			if !budget.acquire(r.Context(), n) {
				return busy()
			}
			p.held, p.budget = n, budget
		}
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
		if err == nil {
			// Read on to the end of the body: the read deadline is
			// cleared there (deadlineBody), so that it cannot cut a long
			// call; and a body longer than declared is refused.
			var one [1]byte
			if m, rerr := r.Body.Read(one[:]); m > 0 {
				err = errors.New("body longer than declared")
			} else if rerr != nil && rerr != io.EOF {
				err = rerr
			}
		}
	} else {
		// Unknown length (chunked): a small body is read without the
		// budget; past that, room for the largest is held.
		body, err = io.ReadAll(io.LimitReader(r.Body, smallBodyBytes+1))
		if err == nil && len(body) > smallBodyBytes {
			if !budget.acquire(r.Context(), o.MaxRequestBodyBytes) {
				return busy()
			}
			p.held, p.budget = o.MaxRequestBodyBytes, budget
			var rest []byte
			rest, err = io.ReadAll(io.LimitReader(r.Body, o.MaxRequestBodyBytes+1-int64(len(body))))
			body = append(body, rest...)
		}
		if err == nil && int64(len(body)) > o.MaxRequestBodyBytes {
			s.releasePost(p)
			return nil, tooLarge(o.MaxRequestBodyBytes, "request body")
		}
	}
	if err != nil {
		s.releasePost(p)
		return nil, &refusal{status: http.StatusBadRequest, err: &frameError{code: jsonrpc.CodeParseError, msg: "parse error: the body could not be read"}}
	}
	f, ferr := checkFrame(body)
	if ferr != nil {
		s.releasePost(p)
		return nil, &refusal{status: http.StatusBadRequest, err: ferr}
	}
	p.frame = f
	envelope := int64(len(body) - (f.argEnd - f.argStart))
	switch {
	case f.method != methodCallTool && int64(len(body)) > o.MaxEnvelopeBytes:
		s.releasePost(p)
		return nil, tooLarge(o.MaxEnvelopeBytes, "a message other than tools/call")
	case envelope > o.MaxEnvelopeBytes:
		s.releasePost(p)
		return nil, tooLarge(o.MaxEnvelopeBytes, "a tools/call without its arguments")
	}
	if f.argEnd-f.argStart >= stashMinBytes {
		p.stashd = s.stash.put(r.Header.Get("Mcp-Session-Id"), body[f.argStart:f.argEnd])
		ref := `{"` + stashKey + `":"` + p.stashd + `"}`
		small := make([]byte, 0, int(envelope)+len(ref))
		small = append(small, body[:f.argStart]...)
		small = append(small, ref...)
		small = append(small, body[f.argEnd:]...)
		body = small
	}
	p.body = body
	return p, nil
}

// releasePost gives back what readPost held.
func (s *Server) releasePost(p *post) {
	if p == nil {
		return
	}
	if p.stashd != "" {
		s.stash.drop(p.stashd)
		p.stashd = ""
	}
	if p.held > 0 {
		p.budget.release(p.held)
		p.held = 0
	}
}
