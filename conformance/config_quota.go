package conformance

import "github.com/sandboxkit/sandboxkit/server"

// sessionSandboxCap returns the per-session sandbox cap the server under
// test declares (QUOTA-1), and whether it declares one: the in-process
// reference server's is [server.DefaultSandboxesPerSession]; another
// server's is [Config.SessionSandboxCap], unknown when zero.
func (c *Config) sessionSandboxCap() (int, bool) {
	switch {
	case c.SessionSandboxCap > 0:
		return c.SessionSandboxCap, true
	case c.Kind() == TargetInProcess && !c.Cloud:
		return server.DefaultSandboxesPerSession, true
	}
	return 0, false
}

// InProcessTransferBytes is the decoded size cap of upload_file and
// download_file (BIN-1, BIN-2) that the kit gives the in-process reference
// server against the fake: a quarter of the contract's default, so that
// binary.upload-over-cap sends a 4 MiB + 1 upload (5.6 MB of JSON) instead
// of a 16 MiB + 1 one (22 MB), in each era; the rule it checks is the same.
// At least binary.large-random-round-trip's 2 MiB payload; a power of 4,
// so that one byte over the cap encodes to as many characters as the cap.
const InProcessTransferBytes = 4 << 20

// transferCap returns the decoded size cap of upload_file that the kit
// holds the server to (BIN-1): [InProcessTransferBytes] for the in-process
// reference server on the fake, which the kit configures; the contract's
// default otherwise.
func (c *Config) transferCap() int {
	if c.Kind() == TargetInProcess && !c.Cloud {
		return InProcessTransferBytes
	}
	return binCap
}
