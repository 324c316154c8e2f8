package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func asError(err error, target **Error) bool { return errors.As(err, target) }

func TestCategoryForStatus(t *testing.T) {
	tests := map[int]Category{
		400: InvalidArgument, 401: Unauthenticated, 403: PermissionDenied, 404: NotFound, 409: Conflict,
		410: NotFound, 429: RateLimited, 500: ProviderError, 502: Unavailable, 503: Unavailable, 504: Timeout,
		507: ProviderError, 418: ProviderError,
	}
	for status, want := range tests {
		if got := CategoryForStatus(status); got != want {
			t.Errorf("CategoryForStatus(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestError_TextAndMatching(t *testing.T) {
	err := statusError(OpGetSandbox, 404, "sandbox_gone")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		t.Errorf("errors.Is mismatch for %v", err)
	}
	want := `sandbox: GET /sandboxes/{sandboxID}: not_found (http 404) (code sandbox_gone)`
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if err.Recovery() == "" || err.Recovery() != NotFound.Recovery() {
		t.Errorf("recovery hint missing")
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if CategoryOf(wrapped) != NotFound {
		t.Errorf("CategoryOf(wrapped) = %s", CategoryOf(wrapped))
	}
}

func TestStatusError_DropsSuspiciousCodes(t *testing.T) {
	for _, code := range []string{"has space", "https://evil.test/x", strings.Repeat("a", 65), "tok=e2b_123"} {
		if e := statusError(OpCreateSandbox, 500, code); e.Code != "" {
			t.Errorf("code %q kept", code)
		}
	}
	if e := statusError(OpCreateSandbox, 503, "sandbox_capacity_unavailable"); e.Code != "sandbox_capacity_unavailable" {
		t.Errorf("well-formed code dropped")
	}
}

func TestTransportError(t *testing.T) {
	tests := []struct {
		err  error
		want Category
	}{
		{context.DeadlineExceeded, Timeout},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), Unavailable},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), Unavailable},
		{errors.New("Get \"https://api.e2b.app/x?key=e2b_secret\": boom"), Unavailable},
	}
	for _, tt := range tests {
		e := transportError(OpListSandboxes, tt.err)
		if e.Category != tt.want {
			t.Errorf("transportError(%v) = %s, want %s", tt.err, e.Category, tt.want)
		}
		if strings.Contains(e.Error(), "e2b_secret") || strings.Contains(e.Error(), "https://") {
			t.Errorf("transport error text leaks: %q", e.Error())
		}
	}
	if !errors.Is(transportError(OpListSandboxes, context.DeadlineExceeded), context.DeadlineExceeded) {
		t.Errorf("deadline cause not exposed")
	}
}
