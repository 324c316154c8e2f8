package fakeprovider_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// A test seeds a sandbox, calls the API in-process, lets the sandbox expire
// by moving the fake clock, and inspects the journal.
func ExampleProvider() {
	clock := fakeprovider.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := fakeprovider.New(&fakeprovider.Options{Clock: clock})
	id := p.AddSandbox(fakeprovider.SandboxSeed{ID: "iexample", EndAt: clock.Now().Add(time.Minute)})

	get := func() int {
		req, _ := http.NewRequest("GET", "https://api.e2b.app/sandboxes/"+id, nil)
		req.Header.Set("X-API-Key", p.APIKey())
		res, err := p.HTTPClient().Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode
	}
	fmt.Println(get())
	clock.Advance(2 * time.Minute)
	fmt.Println(get())
	fmt.Println(p.Journal().Count(sandbox.OpGetSandbox), p.LiveCount())
	// Output:
	// 200
	// 404
	// 2 0
}

// Faults make a route fail before its handler runs.
func ExampleProvider_InjectFault() {
	p := fakeprovider.New(nil)
	p.InjectFault(fakeprovider.Fault{Op: sandbox.OpCreateSandbox, Status: http.StatusServiceUnavailable, Times: 1})
	for range 2 {
		req, _ := http.NewRequest("POST", "https://api.e2b.app/sandboxes", strings.NewReader(`{"templateID":"base"}`))
		req.Header.Set("X-API-Key", p.APIKey())
		res, err := p.HTTPClient().Do(req)
		if err != nil {
			panic(err)
		}
		res.Body.Close()
		fmt.Println(res.StatusCode)
	}
	// Output:
	// 503
	// 201
}
