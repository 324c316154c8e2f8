package main

import (
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// serveFakePlatform builds a platform whose only provider is an in-memory
// fake reached through its in-process HTTP client. It returns the secrets
// to scrub and a cleanup that kills every fake sandbox.
func serveFakePlatform(requestTimeout time.Duration) (*sandbox.Platform, []string, func(), error) {
	fp := fakeprovider.New(nil) // sandboxes get the in-memory daemon
	opts := fp.PlatformOptions()
	opts.UserAgent = "sandboxkit/" + serveVersion()
	opts.RequestTimeout = requestTimeout
	p, err := sandbox.NewPlatform(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, []string{fp.APIKey()}, fp.Close, nil
}
