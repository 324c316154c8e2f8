package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandboxkit/sandboxkit/fakeprovider"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// A platform reads its default provider, "e2b", from the environment. Here
// the environment and the transport point at an in-process fake provider;
// against E2B, sandbox.NewPlatform(nil) reads E2B_API_KEY and friends.
func ExampleNewPlatform() {
	fake := fakeprovider.New(nil)
	defer fake.Close()
	p, err := sandbox.NewPlatform(fake.PlatformOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	sb, err := p.Create(ctx, &sandbox.CreateOptions{Metadata: map[string]string{"owner": "example"}})
	if err != nil {
		panic(err)
	}
	out, err := sb.Envd(nil).RunOutput(ctx, "echo hello from $HOME", nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (exit %d)\n", strings.TrimSpace(string(out.Stdout)), out.ExitCode)

	info, err := p.GetInfoByID(ctx, sb.ID(), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Template, info.Status)

	if err := p.KillByID(ctx, sb.ID(), nil); err != nil {
		panic(err)
	}
	_, err = p.GetInfoByID(ctx, sb.ID(), nil)
	fmt.Println(errors.Is(err, sandbox.ErrNotFound), sandbox.CategoryOf(err))
	// Output:
	// hello from /home/user (exit 0)
	// base running
	// true not_found
}

// A signed URL lets a caller move a file's bytes with plain HTTP, without
// the API key or the access token: here a download URL valid for five
// minutes, fetched with a bare GET.
func ExampleEnvd_DownloadURL() {
	fake := fakeprovider.New(nil)
	defer fake.Close()
	p, err := sandbox.NewPlatform(fake.PlatformOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	sb, err := p.Create(ctx, nil)
	if err != nil {
		panic(err)
	}
	defer func() { _ = sb.Kill(ctx) }()
	envd := sb.Envd(nil)
	if _, err := envd.WriteText(ctx, "notes.txt", "signed and sealed\n"); err != nil {
		panic(err)
	}
	u, err := envd.DownloadURL("notes.txt", time.Now().Add(5*time.Minute))
	if err != nil {
		panic(err)
	}
	res, err := fake.HTTPClient().Get(u) // no header, no credential
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(res.StatusCode, " ", string(body))
	// Output:
	// 200 signed and sealed
}
