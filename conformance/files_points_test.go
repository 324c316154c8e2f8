package conformance

import "testing"

// FILE-2's pointer to download_file may use the server's name for it: a
// server whose tool map renames download_file to downloadFile and whose
// error says "use downloadFile" points to it (that was a false failure).
func TestFilesPointerUsesServerToolName(t *testing.T) {
	cfg := NewConfig()
	cfg.Tools = map[string]ToolAdapter{"download_file": {Name: "downloadFile"}}
	for text, want := range map[string]bool{
		"not UTF-8 text: read it with downloadFile":  true,
		"not UTF-8 text: read it with download_file": true,
		"not UTF-8 text": false,
	} {
		if got := mentionsTool(cfg, text, "download_file"); got != want {
			t.Errorf("%q mentions download_file: %v, want %v", text, got, want)
		}
	}
}
