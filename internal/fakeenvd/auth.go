package fakeenvd

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/internal/envdapi"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// unauthorizedMessage is envd's 401 message for a missing or wrong token.
const unauthorizedMessage = "unauthorized access, please provide a valid access token or method signing if supported"

// tokenOK compares the X-Access-Token header with the configured token.
func (d *Daemon) tokenOK(r *http.Request) bool {
	got := r.Header.Get(envdapi.AccessTokenHeader)
	return subtle.ConstantTimeCompare([]byte(got), []byte(d.cfg.AccessToken)) == 1
}

// authorized applies envd's token middleware: with a token configured,
// every route except GET /health and GET/POST /files needs the header
// (the /files handlers check the header or a signature themselves).
func (d *Daemon) authorized(r *http.Request) bool {
	if d.cfg.AccessToken == "" {
		return true
	}
	switch r.Method + " " + r.URL.Path {
	case sandbox.OpEnvdHealth, sandbox.OpFilesDownload, sandbox.OpFilesUpload:
		return true
	}
	return d.tokenOK(r)
}

// checkSigning validates a /files request: the token header when present,
// otherwise the signature (and expiration) query parameters, as envd does
// (e2b-dev/infra packages/envd/internal/api/auth.go validateSigning): the
// signature covers the path as given, the operation (read for GET, write
// for POST) and the username, so a URL is scoped to all three, and one
// with an expiration is refused once it has passed.
func (d *Daemon) checkSigning(r *http.Request, path, operation string) error {
	if d.cfg.AccessToken == "" {
		return nil
	}
	if r.Header.Get(envdapi.AccessTokenHeader) != "" {
		if !d.tokenOK(r) {
			return errors.New("access token present in header but does not match")
		}
		return nil
	}
	q := r.URL.Query()
	if !q.Has("signature") {
		return errors.New("missing signature query parameter")
	}
	exp, err := SignatureExpiration(q)
	if err != nil {
		return err
	}
	if !SignatureMatches(q, path, operation, d.cfg.AccessToken, exp) {
		return errors.New("invalid signature")
	}
	if exp != nil && *exp < time.Now().Unix() {
		return errors.New("signature is already expired")
	}
	return nil
}

// SignatureExpiration reads a signed /files query's signature_expiration:
// nil when it has none, an error when it is not a Unix time.
func SignatureExpiration(q url.Values) (*int64, error) {
	s := q.Get("signature_expiration")
	if s == "" {
		return nil, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return nil, errors.New("invalid signature expiration")
	}
	return &v, nil
}

// SignatureMatches reports whether a /files query's signature is token's
// for path, operation, the query's username and exp.
func SignatureMatches(q url.Values, path, operation, token string, exp *int64) bool {
	want := envdapi.FileSignature(path, operation, q.Get("username"), token, exp)
	return subtle.ConstantTimeCompare([]byte(want), []byte(q.Get("signature"))) == 1
}

// account finds a user by name; "" is the default user.
func (d *Daemon) account(name string) (account, bool) {
	if name == "" {
		name = d.cfg.User
	}
	for _, a := range d.cfg.accounts() {
		if a.name == name {
			return a, true
		}
	}
	return account{}, false
}
