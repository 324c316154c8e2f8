package sandbox

import (
	"context"
	"time"
)

// openStream runs open, which opens a process event stream on a context
// that cancel cancels, and fails with category timeout when the daemon has
// not reported the process's start within the platform's request timeout
// ([Options.RequestTimeout]): a daemon that never answers, or answers a
// byte at a time, must not hold a call for a command's whole timeout. A
// stream that opened just as the bound passed is closed, and a process it
// started is killed. ctx is the caller's context, for that kill only.
func (e *Envd) openStream(ctx context.Context, op string, cancel context.CancelFunc, open func() (*ProcessStream, error)) (*ProcessStream, error) {
	return e.openStreamWithin(ctx, op, 0, cancel, open)
}

// openStreamWithin is openStream bounded by within instead of the
// platform's request timeout when within is positive and shorter.
func (e *Envd) openStreamWithin(ctx context.Context, op string, within time.Duration, cancel context.CancelFunc, open func() (*ProcessStream, error)) (*ProcessStream, error) {
	bound := e.requestTimeout
	if within > 0 {
		bound = min(bound, within)
	}
	timer := time.AfterFunc(bound, cancel)
	st, err := open()
	if timer.Stop() {
		return st, err
	}
	// The bound passed: the stream's context is (being) cancelled.
	cancel()
	if st != nil {
		_ = st.Close()
		if op == OpProcessStart {
			e.killAfter(ctx, st.Pid())
		}
	}
	return nil, &Error{Op: op, Category: Timeout}
}
