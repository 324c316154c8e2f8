package main

import (
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// serveFakeAPIURL is where the platform thinks the fake lives; the fake's
// in-process client serves every host, so nothing is ever dialled.
const serveFakeAPIURL = "https://api.fake.sandboxkit.test"

// serveFakePlatform builds a platform whose only provider is an in-memory
// fake reached through its in-process HTTP client. It returns the secrets
// to scrub and a cleanup that kills every fake sandbox.
func serveFakePlatform(requestTimeout time.Duration) (*sandbox.Platform, []string, func(), error) {
	fp := fakeprovider.New(nil) // sandboxes get the in-memory daemon
	env := map[string]string{
		sandbox.EnvAPIKey: fp.APIKey(),
		sandbox.EnvAPIURL: serveFakeAPIURL,
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{
		Getenv:         func(k string) string { return env[k] },
		HTTPClient:     fp.HTTPClient(),
		UserAgent:      "sandboxkit/" + serveVersion(),
		RequestTimeout: requestTimeout,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return p, []string{fp.APIKey()}, fp.Close, nil
}
