package conformance

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// TestUploadArgsAreTheMarshalledArguments checks that the upload arguments
// the kit writes out by hand are the JSON of the arguments it means,
// whatever the path holds.
func TestUploadArgsAreTheMarshalledArguments(t *testing.T) {
	data := base64.StdEncoding.EncodeToString([]byte("sandboxkit\xfb\xef\xbe\xff"))
	for _, path := range []string{"/tmp/big.bin", `/tmp/a "quoted"\ <path>`, "/tmp/ünï"} {
		raw := uploadArgs(path, data)
		var got map[string]string
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("uploadArgs(%q): not JSON: %v: %s", path, err, raw)
		}
		if len(got) != 2 || got["path"] != path || got["data_base64"] != data {
			t.Errorf("uploadArgs(%q) = %s", path, raw)
		}
	}
}
