package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// frame is what checkFrame learned of one JSON-RPC message.
type frame struct {
	// id is the message's raw id ("" when absent: a notification).
	id string
	// method is the request's method ("" for a response).
	method string
	// argStart and argEnd delimit params.arguments of a tools/call in the
	// message (both 0 when there is none).
	argStart, argEnd int
	// paramsStart and paramsEnd delimit params in the message (both 0 when
	// there is none).
	paramsStart, paramsEnd int
}

// frameError is a message refused before dispatch: the JSON-RPC error to
// answer with, and the id to answer it under (raw JSON, "null" when the id
// could not be read).
type frameError struct {
	id   string
	code int64
	msg  string
}

func (e *frameError) Error() string { return e.msg }

// response is the JSON-RPC error response for e, as one line of JSON.
func (e *frameError) response() []byte {
	id := e.id
	if id == "" {
		id = "null"
	}
	msg, _ := json.Marshal(e.msg)
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.FormatInt(e.code, 10) + `,"message":` + string(msg) + `}}`)
}

// integralID is the only form of numeric JSON-RPC id accepted: an integer
// written without fraction or exponent. JSON-RPC 2.0 §4 says numbers
// "SHOULD NOT contain fractional parts"; the SDK would answer 1.5 as 1.
var integralID = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,18})$`)

// maxExactID is the largest id magnitude the SDK answers exactly: it
// decodes ids as float64.
const maxExactID = 1 << 53

// validNumericID reports whether a raw numeric id is an integer the SDK
// answers under the same id.
func validNumericID(raw string) bool {
	if !integralID.MatchString(raw) {
		return false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	return err == nil && n <= maxExactID && n >= -maxExactID
}

// strictDecoder reads data in place: given a *bytes.Buffer, jsontext parses
// straight from its bytes, where from any other reader it copies the input
// into a buffer that it grows as it goes (for an 11 MB upload line, tens of
// MB per decoder). The decoder only reads data. Invalid UTF-8 is let
// through (see checkFrame).
func strictDecoder(data []byte) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowInvalidUTF8(true))
}

// checkFrame validates one JSON-RPC message strictly, before any decoder
// that would be lenient sees it: exactly one JSON value (nothing after it),
// no object with a duplicate member name anywhere (a gateway reading the
// first "name" must see what the server runs), an object (no batch),
// "jsonrpc":"2.0", an id that is a string or an integer, and a string
// method. Invalid UTF-8 is let through here: params.arguments of a
// tools/call is checked by the tool handler, which names the field; elsewhere
// the SDK's decoder would not act on it.
//
// The duplicate-name, trailing-data and syntax checks are the strict
// decoder's (jsontext); only the JSON-RPC envelope rules are ours.
func checkFrame(data []byte) (*frame, *frameError) {
	whole := strictDecoder(data)
	_, err := whole.ReadValue()
	if err == nil {
		if _, terr := whole.ReadValue(); terr != io.EOF {
			return nil, &frameError{code: jsonrpc.CodeParseError, msg: "parse error: data after the JSON value"}
		}
	}
	if err != nil {
		var se *jsontext.SyntacticError
		if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return nil, &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: duplicate member name at " + strconv.Quote(string(se.JSONPointer))}
		}
		return nil, &frameError{code: jsonrpc.CodeParseError, msg: "parse error: not valid JSON"}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		what := "not a JSON object"
		if len(trimmed) > 0 && trimmed[0] == '[' {
			what = "batches are not supported"
		}
		return nil, &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: " + what}
	}
	dec := strictDecoder(data)
	if _, err := dec.ReadToken(); err != nil { // '{'
		return nil, &frameError{code: jsonrpc.CodeParseError, msg: "parse error"}
	}
	var (
		f                     frame
		version, method, para jsontext.Value
		paramsAt              int
		haveID                bool
	)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, &frameError{code: jsonrpc.CodeParseError, msg: "parse error"}
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, &frameError{code: jsonrpc.CodeParseError, msg: "parse error"}
		}
		switch name {
		// v is valid only until the next read: keep copies, or offsets.
		case "jsonrpc":
			version = v.Clone()
		case "id":
			haveID = true
			f.id = string(v)
		case "method":
			method = v.Clone()
		case "params":
			paramsAt = int(dec.InputOffset()) - len(v)
			para = jsontext.Value(data[paramsAt : paramsAt+len(v)])
			f.paramsStart, f.paramsEnd = paramsAt, paramsAt+len(v)
		}
	}
	// The id first, so that later errors are answered under it.
	if haveID {
		switch k := jsontext.Value(f.id).Kind(); k {
		case '"':
		case '0':
			if !validNumericID(f.id) {
				f.id = ""
				return nil, &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: id must be a string or an integer of at most 2^53"}
			}
		case 'n':
			f.id = ""
			return nil, &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: id must not be null"}
		default:
			f.id = ""
			return nil, &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: id must be a string or an integer"}
		}
	}
	if string(version) != `"2.0"` {
		return nil, &frameError{id: f.id, code: jsonrpc.CodeInvalidRequest, msg: `invalid request: "jsonrpc" must be "2.0"`}
	}
	if len(method) == 0 && !haveID {
		return nil, &frameError{code: jsonrpc.CodeInvalidRequest, msg: "invalid request: neither a method nor an id"}
	}
	if len(method) > 0 {
		if method.Kind() != '"' {
			return nil, &frameError{id: f.id, code: jsonrpc.CodeInvalidRequest, msg: "invalid request: method must be a string"}
		}
		var m string
		if err := json.Unmarshal(method, &m); err != nil || !utf8.ValidString(m) {
			return nil, &frameError{id: f.id, code: jsonrpc.CodeInvalidRequest, msg: "invalid request: method must be a string"}
		}
		f.method = m
	}
	if f.method == "tools/call" && len(para) > 0 && para.Kind() == '{' {
		if start, end, ok := argumentsSpan(para); ok {
			f.argStart, f.argEnd = paramsAt+start, paramsAt+end
		}
	}
	return &f, nil
}

// request builds the SDK's message for a request that checkFrame has
// read, so that the SDK's decoder does not parse the line a second time:
// jsonrpc.DecodeMessage decodes it twice more (the envelope, then the
// method), each time with a fresh 32 KiB buffer (docs/benchmarks.md).
// The message is the one DecodeMessage gives: the same method, an ID
// made by jsonrpc.MakeID from what the SDK's decoder would give (a
// float64 for an integer, which checkFrame bounds to 2^53, or a string),
// and params as the raw bytes. ok is false for a response and for any
// form it does not build the same way (a method "", an escaped string id,
// params null); those go to jsonrpc.DecodeMessage.
func request(data []byte, f *frame) (_ *jsonrpc.Request, ok bool) {
	if f.method == "" {
		return nil, false
	}
	var raw any
	switch {
	case f.id == "": // a notification
	case f.id[0] == '"':
		s := f.id[1 : len(f.id)-1]
		if strings.IndexByte(s, '\\') >= 0 || !utf8.ValidString(s) {
			return nil, false
		}
		raw = s
	default:
		n, err := strconv.ParseFloat(f.id, 64) // an integer of at most 2^53: exact
		if err != nil {
			return nil, false
		}
		raw = n
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil {
		return nil, false
	}
	var params json.RawMessage
	if f.paramsEnd > f.paramsStart {
		params = data[f.paramsStart:f.paramsEnd]
		if string(params) == "null" {
			return nil, false
		}
	}
	return &jsonrpc.Request{ID: id, Method: f.method, Params: params}, true
}

// argumentsSpan finds the "arguments" member of a params object: the
// offsets of its value in params.
func argumentsSpan(params jsontext.Value) (start, end int, ok bool) {
	dec := strictDecoder(params)
	if _, err := dec.ReadToken(); err != nil {
		return 0, 0, false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return 0, 0, false
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return 0, 0, false
		}
		if name == "arguments" {
			end := int(dec.InputOffset())
			return end - len(v), end, true
		}
	}
	return 0, 0, false
}

// invalidUTF8Member returns the name of the first top-level member of an
// arguments object whose value holds a string that is not valid UTF-8
// (raw bytes in the message: a JSON escape cannot make one), or "" when
// every string is valid. The SDK's decoder would silently replace such
// bytes with U+FFFD.
func invalidUTF8Member(args []byte) string {
	if utf8.Valid(args) {
		return ""
	}
	dec := strictDecoder(args)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "arguments"
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return "arguments"
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return "arguments"
		}
		if !utf8.Valid(v) || !utf8.ValidString(name) {
			return name
		}
	}
	return "arguments"
}
