package conformance

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TOOLS-3: a success's text block is the JSON of structuredContent; only an
// inline download_file may leave out the one member holding data_base64.
func TestTextExpected(t *testing.T) {
	const full = `{"path":"/f","size":2,"sha256":"ab","data_base64":"AAE=","truncated":false}`
	for _, tc := range []struct {
		name, tool, text string
		pass             bool
	}{
		{"download, whole text", "download_file", full, true},
		{"download, text without data_base64", "download_file", `{"path":"/f","size":2,"sha256":"ab","truncated":false}`, true},
		{"download, text without sha256", "download_file", `{"path":"/f","size":2,"data_base64":"AAE=","truncated":false}`, false},
		{"download, text without data_base64 and size", "download_file", `{"path":"/f","sha256":"ab","truncated":false}`, false},
		{"download, other value", "download_file", `{"path":"/g","size":2,"sha256":"ab","truncated":false}`, false},
		{"another tool, text without a member", "read_file", `{"path":"/f","size":2,"sha256":"ab","truncated":false}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Tool: tc.tool, structured: json.RawMessage(full)}
			_ = json.Unmarshal([]byte(full), &r.Structured)
			var fromText any
			if err := json.Unmarshal([]byte(tc.text), &fromText); err != nil {
				t.Fatal(err)
			}
			if got := reflect.DeepEqual(fromText, textExpected(r, fromText)); got != tc.pass {
				t.Errorf("text %s accepted: %v, want %v", tc.text, got, tc.pass)
			}
		})
	}
}
