package fakeenvd

import (
	"context"
	"testing"

	"connectrpc.com/connect"
)

// TestStartTimeoutIsDeadlineExceeded runs the race between the request's
// deadline and the kill of its process a few hundred times: every run must
// end as envd ends it, with deadline_exceeded and no end event (infra
// packages/envd/internal/services/process/start.go), never with an end
// event "signal: killed", which the Python SDK reports as
// CommandExitException instead of TimeoutException.
func TestStartTimeoutIsDeadlineExceeded(t *testing.T) {
	e := newEnv(t, Config{})
	const runs = 300
	for i := range runs {
		// The header alone, without a client-side deadline, so that what the
		// client reads is what the daemon sent.
		st := startStream(t, context.Background(), e, bashReq("sleep 10"), headers{"Connect-Timeout-Ms": "1"})
		sawEnd := false
		for st.Receive() {
			if st.Msg().Event.End != nil {
				sawEnd = true
			}
		}
		err := st.Err()
		st.Close()
		if sawEnd || connect.CodeOf(err) != connect.CodeDeadlineExceeded {
			t.Fatalf("run %d of %d: end event %v, stream error %v; want deadline_exceeded and no end event", i+1, runs, sawEnd, err)
		}
	}
	waitFor(t, func() bool { return len(e.d.Processes()) == 0 })
}
