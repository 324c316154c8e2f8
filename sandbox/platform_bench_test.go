package sandbox_test

import (
	"context"
	"testing"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// BenchmarkControlPlane measures the SDK's control-plane calls against the
// fake provider, in-process (the SDK and the fake's handlers, no socket)
// and on loopback HTTP/1.1. By-ID calls run on temporary transport
// resources (SDK-3), so on loopback each one opens and closes a
// connection. The fake holds 100 running sandboxes.
//
//	go test ./sandbox -run '^$' -bench BenchmarkControlPlane -benchmem
func BenchmarkControlPlane(b *testing.B) {
	for _, where := range []string{"in-process", "loopback"} {
		fake := fakeprovider.New(&fakeprovider.Options{SandboxLimit: 200}) // 100 listed, room for creates
		b.Cleanup(fake.Close)
		opts := fake.PlatformOptions()
		if where == "loopback" {
			opts.HTTPClient = nil
			opts = withEnv(opts, sandbox.EnvAPIURL, fake.Start(b).URL())
		}
		p, err := sandbox.NewPlatform(opts)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		id := fake.AddSandbox(fakeprovider.SandboxSeed{})
		for range 99 {
			fake.AddSandbox(fakeprovider.SandboxSeed{})
		}
		b.Run(where+"/GetInfoByID", func(b *testing.B) {
			for b.Loop() {
				if _, err := p.GetInfoByID(ctx, id, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(where+"/List100", func(b *testing.B) {
			for b.Loop() {
				if got, err := p.List(ctx, &sandbox.ListOptions{Limit: 100}); err != nil || len(got) != 100 {
					b.Fatal(len(got), err)
				}
			}
		})
		b.Run(where+"/CreateKill", func(b *testing.B) {
			for b.Loop() {
				sb, err := p.Create(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := sb.Kill(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
