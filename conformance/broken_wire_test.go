package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// The broken variants of the message-strictness specs (WIRE-*): each puts
// a lenient layer in front of the in-process server's Streamable HTTP
// handler, as a gateway or a lenient decoder would, and the spec written
// for that rule must catch it.
func wireBrokenVariants() []brokenVariant {
	return []brokenVariant{
		{"wire-accepts-trailing-data", FamilyProtocol, "reads the first JSON value of a body and ignores what follows", rewritesBody(firstValueOnly)},
		{"wire-runs-batches", FamilyProtocol, "runs the first member of a JSON-RPC batch", rewritesBody(firstBatchMember)},
		{"wire-rounds-ids", FamilyProtocol, "reads ids as doubles and answers under the integer it rounds them to", rewritesBody(roundsID)},
		{"wire-lenient-envelope", FamilyProtocol, `takes a message without "jsonrpc":"2.0" as a request`, rewritesBody(fillsJSONRPC)},
		{"wire-refuses-duplicates-but-runs", FamilyProtocol, "answers a message with duplicate names -32600, and runs its last-wins reading anyway", refusesDuplicatesButRuns},
	}
}

// wireFocusedSpecs are the specs each wire variant must fail.
var wireFocusedSpecs = map[string][]string{
	"wire-accepts-trailing-data":       {"protocol.wire-not-json"},
	"wire-runs-batches":                {"protocol.wire-batch"},
	"wire-rounds-ids":                  {"protocol.wire-ids"},
	"wire-lenient-envelope":            {"protocol.wire-not-a-request"},
	"wire-refuses-duplicates-but-runs": {"protocol.wire-duplicate-names"},
}

// rewritesBody is a variant whose HTTP handler edits each POST body before
// the server reads it.
func rewritesBody(edit func([]byte) []byte) func() *breakage {
	return func() *breakage {
		return &breakage{handler: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					body, _ := io.ReadAll(r.Body)
					setBody(r, edit(body))
				}
				next.ServeHTTP(w, r)
			})
		}}
	}
}

func setBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
}

// firstValueOnly keeps the first JSON value of a body (WIRE-2).
func firstValueOnly(body []byte) []byte {
	var v json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&v); err != nil {
		return body
	}
	return v
}

// firstBatchMember turns a batch into its first member (WIRE-4).
func firstBatchMember(body []byte) []byte {
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil || len(batch) == 0 {
		return body
	}
	return batch[0]
}

// roundsID replaces a numeric id by the integer a double-reading server
// would answer under (WIRE-5).
func roundsID(body []byte) []byte {
	return editEnvelope(body, func(m map[string]json.RawMessage) {
		f, err := strconv.ParseFloat(string(m["id"]), 64)
		if err != nil || strings.HasPrefix(string(m["id"]), `"`) {
			return
		}
		m["id"] = json.RawMessage(strconv.FormatFloat(math.Trunc(f), 'f', -1, 64))
	})
}

// fillsJSONRPC sets "jsonrpc":"2.0" on any object (WIRE-3).
func fillsJSONRPC(body []byte) []byte {
	return editEnvelope(body, func(m map[string]json.RawMessage) {
		m["jsonrpc"] = json.RawMessage(`"2.0"`)
	})
}

// editEnvelope edits the top-level members of a JSON object body; any
// other body is left as it is.
func editEnvelope(body []byte, edit func(map[string]json.RawMessage)) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return body
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// refusesDuplicatesButRuns answers a body with a duplicate member name
// with -32600 itself, but first hands its last-wins reading (encoding/json's)
// to the server, whose answer it drops (WIRE-6, WIRE-1).
func refusesDuplicatesButRuns() *breakage {
	return &breakage{handler: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			_, err := jsontext.NewDecoder(bytes.NewReader(body)).ReadValue()
			if !errors.Is(err, jsontext.ErrDuplicateName) {
				setBody(r, body)
				next.ServeHTTP(w, r)
				return
			}
			var lastWins any
			_ = json.Unmarshal(body, &lastWins)
			reread, _ := json.Marshal(lastWins)
			setBody(r, reread)
			next.ServeHTTP(httptest.NewRecorder(), r)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: duplicate member name"}}`)
		})
	}}
}
