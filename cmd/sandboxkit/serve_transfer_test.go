package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// --transfer-url-ttl is refused outside 1s..1h before anything starts
// (BIN-3: a signed URL always expires, within the hour), and reaches the
// server's limits.
func TestServeTransferURLTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, 500 * time.Millisecond, time.Hour + time.Second} {
		cfg := serveConfig{logLevel: "info", fake: true, transferURLTTL: ttl}
		err := runServe(context.Background(), cfg, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--transfer-url-ttl") {
			t.Errorf("--transfer-url-ttl %s: %v, want a refusal naming the flag", ttl, err)
		}
	}
	if got := serveLimits(serveConfig{transferURLTTL: 42 * time.Second}).TransferURLTTL; got != 42*time.Second {
		t.Errorf("serveLimits: TransferURLTTL %s", got)
	}
}
