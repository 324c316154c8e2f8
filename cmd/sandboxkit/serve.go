package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxkit/sandboxkit/sandbox"
	"github.com/sandboxkit/sandboxkit/server"
)

// serveDefaultTokenEnv names the environment variable that holds the HTTP bearer token.
const serveDefaultTokenEnv = "SANDBOXKIT_HTTP_TOKEN"

// serveConfig is what the serve flags map to.
type serveConfig struct {
	httpAddr       string
	fake           bool
	configPath     string
	logLevel       string
	sessionTimeout time.Duration
	tokenEnv       string
	maxBodyBytes   int64
	shutdownWait   time.Duration
}

// newServeCommand runs the reference MCP server.
func newServeCommand() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference MCP server (stdio, or Streamable HTTP with --http)",
		Long: `serve runs sandboxkit's reference MCP server: the fifteen sandbox tools of the
tool contract (create_sandbox, kill_sandbox, run_code, run_command, read_file,
write_file, list_files, list_sandboxes, get_sandbox, set_sandbox_timeout,
start_background_command, get_background_command, kill_background_command,
upload_file, download_file) on E2B or an E2B-compatible provider.

Transports. Without --http it speaks MCP over stdin and stdout (one session,
ending at end of input). With --http ADDR it serves Streamable HTTP at
http://ADDR/mcp and a health check at /healthz. Both transports share one
server, so tools/list and results are identical. Logs go to stderr only.

Provider credentials. The default provider "e2b" reads E2B_API_KEY, and
optionally E2B_DOMAIN, E2B_API_URL and E2B_SANDBOX_URL. More providers come
from a JSON file given with --config (each names the environment variable
holding its key; keys never go in the file). With no credentials at all the
command refuses to start, unless --fake is given: then it runs against the
embedded in-memory fake provider, and nothing leaves the process.

Sessions. Each MCP session has at most one default sandbox and owns the
sandboxes it creates. When the session ends (end of stdin, HTTP DELETE, HTTP
idle timeout, or server shutdown on SIGINT/SIGTERM) every sandbox it owns is
destroyed, and no other sandbox is touched.

HTTP security. The listen address should be a loopback address
(127.0.0.1:8080, [::1]:8080, localhost:8080). A non-loopback address is
accepted only when a bearer token is set in the environment variable named by
--token-env (default ` + serveDefaultTokenEnv + `); clients then send
"Authorization: Bearer <token>". DNS-rebinding protection and cross-origin
protection are always on, and request bodies are limited.

Examples:

  E2B_API_KEY=e2b_... sandboxkit serve
  sandboxkit serve --fake
  sandboxkit serve --http 127.0.0.1:8080 --session-timeout 10m
  SANDBOXKIT_HTTP_TOKEN=$(openssl rand -hex 32) sandboxkit serve --http 0.0.0.0:8080
  sandboxkit serve --config providers.json --log-level debug`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), cfg, os.Getenv, os.Stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	f.BoolVar(&cfg.fake, "fake", false, "run against the embedded in-memory fake provider instead of a real one")
	f.StringVar(&cfg.configPath, "config", "", "JSON file listing extra providers (IDs, URLs, regions, API key variable names)")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
	f.DurationVar(&cfg.sessionTimeout, "session-timeout", server.DefaultSessionTimeout, "close an HTTP session idle this long and destroy its sandboxes (0: never)")
	f.StringVar(&cfg.tokenEnv, "token-env", serveDefaultTokenEnv, "environment variable holding the HTTP bearer token (required for a non-loopback --http address)")
	f.Int64Var(&cfg.maxBodyBytes, "max-request-bytes", 0, "largest HTTP request body accepted (0: room for the largest upload)")
	f.DurationVar(&cfg.shutdownWait, "shutdown-timeout", 60*time.Second, "how long shutdown waits for owned sandboxes to be destroyed")
	return cmd
}

// runServe builds the platform and the server and serves until the
// transport ends or ctx is cancelled; cleanup finishes before it returns.
func runServe(ctx context.Context, cfg serveConfig, getenv func(string) string, stderr io.Writer) error {
	level, err := serveLogLevel(cfg.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var token string
	if cfg.httpAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.httpAddr); err != nil {
			return fmt.Errorf("--http %q: want host:port, e.g. 127.0.0.1:8080", cfg.httpAddr)
		}
		token = strings.TrimSpace(getenv(cfg.tokenEnv))
		if !server.IsLoopbackAddr(cfg.httpAddr) && token == "" {
			return fmt.Errorf("--http %s is not a loopback address: set a bearer token in $%s (or listen on 127.0.0.1)", cfg.httpAddr, cfg.tokenEnv)
		}
	}

	var (
		platform *sandbox.Platform
		secrets  []string
		cleanup  = func() {}
	)
	if cfg.fake {
		if cfg.configPath != "" {
			return errors.New("--fake and --config cannot be combined: the fake provider is the only provider")
		}
		platform, secrets, cleanup, err = serveFakePlatform()
		if err != nil {
			return err
		}
		fmt.Fprintln(stderr, "sandboxkit serve: using the embedded in-memory FAKE provider (--fake): no real sandboxes are created")
	} else {
		platform, err = serveRealPlatform(cfg.configPath, getenv)
		if err != nil {
			return err
		}
		secrets = server.SecretsFromEnv(platform, getenv)
	}
	defer cleanup()
	if token != "" {
		secrets = append(secrets, token)
	}

	srv, err := server.New(&server.Deps{Platform: platform, Logger: logger, Secrets: secrets}, &server.Options{Version: serveVersion()})
	if err != nil {
		return err
	}
	if cfg.httpAddr == "" {
		logger.Info("serving MCP on stdio")
		return srv.RunStdio(ctx)
	}
	return serveStreamableHTTP(ctx, srv, cfg, token, logger)
}

// serveRealPlatform builds the platform from the environment and the optional
// config file, and refuses to start without any credential.
func serveRealPlatform(configPath string, getenv func(string) string) (*sandbox.Platform, error) {
	var pc *sandbox.Config
	if configPath != "" {
		c, err := sandbox.LoadConfig(configPath)
		if err != nil {
			return nil, err
		}
		pc = c
	}
	p, err := sandbox.NewPlatform(&sandbox.Options{Config: pc, Getenv: getenv, UserAgent: "sandboxkit/" + serveVersion()})
	if err != nil {
		return nil, err
	}
	for _, id := range p.Providers() {
		if p.HasCredentials(id) {
			return p, nil
		}
	}
	var names []string
	for _, id := range p.Providers() {
		if c, ok := p.Provider(id); ok {
			names = append(names, c.APIKeyEnv)
		}
	}
	return nil, fmt.Errorf("no provider credentials: set %s (the E2B API key)%s, pass --config with providers whose api_key_env is set, or run with --fake for the in-memory fake provider",
		sandbox.EnvAPIKey, serveOtherKeys(names))
}

func serveOtherKeys(names []string) string {
	var others []string
	for _, n := range names {
		if n != sandbox.EnvAPIKey {
			others = append(others, n)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return " or one of " + strings.Join(others, ", ")
}

// serveStreamableHTTP serves Streamable HTTP until ctx is cancelled, then shuts the
// MCP server down (destroying owned sandboxes) and the HTTP server.
func serveStreamableHTTP(ctx context.Context, srv *server.Server, cfg serveConfig, token string, logger *slog.Logger) error {
	timeout := cfg.sessionTimeout
	if timeout == 0 {
		timeout = -1 // never
	}
	hs := &http.Server{
		Handler:           srv.HTTPHandler(&server.HTTPOptions{Token: token, SessionTimeout: timeout, MaxRequestBodyBytes: cfg.maxBodyBytes}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.httpAddr, err)
	}
	logger.Info("serving MCP over Streamable HTTP", "addr", ln.Addr().String(), "path", server.MCPPath, "auth", token != "")
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownWait)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		logger.Warn("MCP shutdown incomplete", "error", serr.Error())
	}
	if herr := hs.Shutdown(sctx); herr != nil {
		_ = hs.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func serveLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// version is the server version reported to clients.
func serveVersion() string { return "dev" }
