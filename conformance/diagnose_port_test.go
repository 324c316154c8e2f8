package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
)

// Calls to a sandbox port the fake does not serve (neither the daemon's
// 49983 nor the code interpreter's 49999) are named as not testable against
// the fake, whichever way the port was addressed.
func TestOtherSandboxPort(t *testing.T) {
	daemon := fakeprovider.Entry{Envd: true, Host: "49983-iabc.sandboxkit.test", Header: http.Header{}}
	interp := fakeprovider.Entry{Envd: true, Host: "127.0.0.1:4000", Header: http.Header{"E2b-Sandbox-Port": {"49999"}}}
	byHeader := fakeprovider.Entry{Envd: true, Host: "127.0.0.1:4000", Header: http.Header{"E2b-Sandbox-Port": {"3000"}}}
	byHost := fakeprovider.Entry{Envd: true, Host: "8080-iabc.sandboxkit.test", Header: http.Header{}}
	control := fakeprovider.Entry{Host: "api.sandboxkit.test", Header: http.Header{}}
	// A signed transfer URL's plain GET names no sandbox port.
	signedURL := fakeprovider.Entry{Envd: true, Host: "127.0.0.1:34345", Header: http.Header{}}
	for _, c := range []struct {
		entries []fakeprovider.Entry
		want    string
	}{
		{[]fakeprovider.Entry{control, daemon}, ""},
		{[]fakeprovider.Entry{daemon, interp}, ""},
		{[]fakeprovider.Entry{daemon, interp, byHeader}, "3000"},
		{[]fakeprovider.Entry{byHost}, "8080"},
		{[]fakeprovider.Entry{daemon, signedURL}, ""},
	} {
		if got := otherSandboxPort(c.entries); got != c.want {
			t.Errorf("otherSandboxPort = %q, want %q", got, c.want)
		}
	}
	if text := otherPortText("3000"); !strings.Contains(text, "port 3000") || !strings.Contains(text, "49999") {
		t.Errorf("3000: %s", text)
	}
}
