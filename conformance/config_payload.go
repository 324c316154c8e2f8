package conformance

// The payload sizes of the specs that send or provoke large bodies. The
// kit configures the in-process reference server on the fake, so it
// gives it smaller caps than the defaults, and those specs derive their
// payloads from the caps the kit holds the server to: the rules they
// check are the same, at a quarter to an eighth of the bytes (the
// in-process run's CPU time went mostly to copying those bytes).

// InProcessTransferBytes is the decoded size cap of upload_file and
// download_file (BIN-1, BIN-2) that the kit gives the in-process reference
// server against the fake: a quarter of the contract's default, so that
// binary.upload-over-cap sends a 4 MiB + 1 upload (5.6 MB of JSON) instead
// of a 16 MiB + 1 one (22 MB), in each era. At least
// binary.large-random-round-trip's 2 MiB payload; a power of 4, so that one
// byte over the cap encodes to as many characters as the cap.
const InProcessTransferBytes = 4 << 20

// transferCap returns the decoded size cap of upload_file that the kit
// holds the server to (BIN-1): [InProcessTransferBytes] for the in-process
// reference server on the fake, which the kit configures; the contract's
// default otherwise.
func (c *Config) transferCap() int {
	if c.inProcessOnFake() {
		return InProcessTransferBytes
	}
	return binCap
}

// InProcessResponseBytes is the bound on a platform answer read whole
// (sandbox.Options.MaxResponseBytes) that the kit gives the in-process
// reference server against the fake: an eighth of the default, far above
// any answer of the fake (its daemon sends output in 32 KiB chunks).
const InProcessResponseBytes = 4 << 20

// oversizeBytes returns the body size of errors.oversized's fault: a
// quarter more than the bound the in-process reference server on the fake
// was given, and otherwise deadlineOversize, more than any answer a server
// should read whole (the reference server stops at 32 MiB).
func (c *Config) oversizeBytes() int64 {
	if c.inProcessOnFake() {
		return InProcessResponseBytes + InProcessResponseBytes/4
	}
	return deadlineOversize
}

// inProcessOnFake reports whether the server under test is the in-process
// reference server on the fake: the kit chooses its configuration.
func (c *Config) inProcessOnFake() bool { return c.Kind() == TargetInProcess && !c.Cloud }
