package server

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxkit/sandboxkit/internal/toolset"
	"github.com/sandboxkit/sandboxkit/sandbox"
)

// metadata is one sandbox's metadata as every tool result shows it: exactly
// nine keys (META-1), times in RFC 3339 UTC or null (META-2), unreported
// resources null (META-3), and nothing else: no token, env var, account,
// user metadata, domain or URL (META-4).
type metadata struct {
	SandboxID  string  `json:"sandbox_id"`
	Template   string  `json:"template"`
	Status     string  `json:"status"`
	Region     *string `json:"region"`
	StartedAt  *string `json:"started_at"`
	EndAt      *string `json:"end_at"`
	CPUCount   *int    `json:"cpu_count"`
	MemoryMB   *int    `json:"memory_mb"`
	DiskSizeMB *int    `json:"disk_size_mb"`
}

// toMetadata copies the nine fields. id is the ID as the caller passes it
// back (META-5).
func toMetadata(id string, in sandbox.Info) metadata {
	if id == "" {
		id = in.SandboxID
	}
	return metadata{
		SandboxID:  id,
		Template:   in.Template,
		Status:     string(in.Status),
		Region:     in.Region,
		StartedAt:  rfc3339(in.StartedAt),
		EndAt:      rfc3339(in.EndAt),
		CPUCount:   in.CPUCount,
		MemoryMB:   in.MemoryMB,
		DiskSizeMB: in.DiskSizeMB,
	}
}

func rfc3339(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// canonicalID parses an explicit sandbox_id and writes it the way results
// show it (bare for the default provider). A malformed ID or an unknown
// provider prefix is a validation error on sandbox_id, before any call.
func canonicalID(p *sandbox.Platform, raw string) (string, error) {
	q, err := p.ParseID(raw)
	if err != nil {
		return "", invalidField("sandbox_id")
	}
	return p.FormatID(q), nil
}

// target returns the sandbox a lifecycle call is about: the explicit
// sandbox_id, else the session's default. Lifecycle tools never create one:
// without either it is a tool error and no call is made (GET-2, TIMEOUT-2).
func target(p *sandbox.Platform, sess *session, a args) (string, error) {
	if a.has("sandbox_id") {
		return canonicalID(p, a.str("sandbox_id"))
	}
	if sess.modern != nil {
		return "", noDefaultModern() // MODERN-1
	}
	id, ok := sess.defaultSandbox()
	if !ok {
		return "", noDefaultError()
	}
	return id, nil
}

// ListSandboxes is list_sandboxes (LIST-1..6): one page of the sandboxes the
// configured account can see, through the SDK's List. It never creates,
// selects or adopts a sandbox (LIST-2).
func ListSandboxes(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		opt("status", enum("Only sandboxes in this state. Default: running and paused.", "running", "paused")),
		opt("limit", withDefault(integer("Page size, 1 to "+itoa(maxListLimit)+". Default "+itoa(maxListLimit)+".", 1, maxListLimit), maxListLimit)),
		opt("offset", withDefault(integer("Number of sandboxes to skip; a larger offset gives the next page. Default 0.", 0, maxListOffset), 0)),
		opt("provider", str("A configured provider ID. Default: the default provider.", 32, providerPattern)),
		opt("region", str("A region of the provider. Default: the provider's default.", 64, regionPattern)),
	)
	out := object("",
		req("sandboxes", &jsonschema.Schema{Type: "array", Items: metadataSchema("One sandbox's metadata.")}),
		req("limit", &jsonschema.Schema{Type: "integer", Description: "The limit applied."}),
		req("offset", &jsonschema.Schema{Type: "integer", Description: "The offset applied."}),
	)
	def := &mcp.Tool{
		Name: toolset.ListSandboxes,
		Description: "List the sandboxes the configured account can see at a provider, one page at a time. " +
			"Page with limit and offset (a larger offset gives the next page); the result has no total count and no cursor. " +
			"Listing never creates a sandbox, never changes a session's default sandbox, and never makes a listed " +
			"sandbox one that a session destroys when it ends. In a 2026-07-28 request from a caller authenticated by a bearer token, " +
			"it lists only the sandboxes that this caller's 2026-07-28 requests created.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		limit := int(a.integer("limit", maxListLimit))
		offset := int(a.integer("offset", 0))
		opts := &sandbox.ListOptions{Provider: a.str("provider"), Region: a.str("region"), Limit: limit, Offset: offset}
		if a.has("status") {
			opts.States = []sandbox.State{sandbox.State(a.str("status"))}
		}
		if p, only := listsOwnOnly(deps, sess); only {
			// HANDLE-1, HANDLE-6: an authenticated (or confined)
			// principal lists only what its modern requests created,
			// through the platform's own metadata filter, so that paging
			// stays the platform's.
			opts.Metadata = map[string]string{PrincipalTagKey: p}
		}
		infos, err := deps.Platform.List(ctx, opts) // LIST-6
		if err != nil {
			return nil, err
		}
		items := make([]metadata, 0, len(infos))
		for _, in := range infos {
			if o, ok := sess.ownedByID(in.SandboxID); ok {
				in = deps.own.reported(o.handle, in) // under an owner lease: the end this session asked for
			}
			items = append(items, toMetadata("", in))
		}
		return struct {
			Sandboxes []metadata `json:"sandboxes"`
			Limit     int        `json:"limit"`
			Offset    int        `json:"offset"`
		}{items, limit, offset}, nil // LIST-5
	})
}

// GetSandbox is get_sandbox (GET-1..7): the latest platform metadata of a
// sandbox. Owned sandboxes are refreshed through their handle (GET-5);
// external IDs are read with GetInfoByID, which never connects (GET-6). It
// never creates a sandbox or extends a lifetime (GET-3).
func GetSandbox(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		opt("sandbox_id", sandboxIDArg("The sandbox to read, bare or as provider:id. Required in a 2026-07-28 request; in a 2025 session, defaults to the session's default sandbox.")),
	)
	def := &mcp.Tool{
		Name: toolset.GetSandbox,
		Description: "Return the latest platform metadata of a sandbox: sandbox_id, template, status, region, started_at, " +
			"end_at, cpu_count, memory_mb, disk_size_mb. Without sandbox_id (2025 sessions only) it reads the session's default sandbox; " +
			"with no default it fails and creates nothing. Reading never extends a sandbox's lifetime, never connects " +
			"to it, and never changes the default.",
		InputSchema:  in,
		OutputSchema: metadataSchema("The sandbox's metadata."),
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		id, err := target(deps.Platform, sess, a) // GET-1, GET-2, GET-4
		if err != nil {
			return nil, err
		}
		if sess.modern != nil {
			return getModern(ctx, deps, sess.modern, id)
		}
		if o, ok := sess.ownedByID(id); ok {
			info, err := o.handle.RefreshInfo(ctx) // GET-5
			if err != nil {
				return nil, err
			}
			return toMetadata(id, deps.own.reported(o.handle, *info)), nil // under an owner lease: the end the session asked for
		}
		if err := guardForeign(ctx, deps, sess, id); err != nil { // HANDLE-1
			return nil, err
		}
		info, err := deps.Platform.GetInfoByID(ctx, id, nil) // GET-6, GET-7
		if err != nil {
			return nil, err
		}
		return toMetadata(id, *info), nil
	})
}

// getModern is get_sandbox in a modern request: one platform read, whose
// metadata also tells whether the sandbox is another principal's
// (HANDLE-1).
func getModern(ctx context.Context, deps *Deps, call *modernCall, id string) (any, error) {
	info, md, err := deps.Platform.GetInfoAndMetadataByID(ctx, id, nil) // GET-6, GET-7
	if err != nil {
		return nil, err
	}
	if recordFrom(md).foreignTo(deps, call.principal) { // HANDLE-1, HANDLE-6
		return nil, foreignSandbox()
	}
	return toMetadata(id, *info), nil
}

// CreateSandbox is create_sandbox (CREATE-1..6): a new sandbox that becomes
// this session's default and is owned, so it is destroyed when the session
// ends. The result is its metadata, refreshed after creation.
func CreateSandbox(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		opt("template", str("Template alias or ID. Default: the provider's default template (\""+sandbox.DefaultTemplate+"\").", 128, templatePattern)),
		opt("timeout", withDefault(integer("Lifetime in seconds, 1 to "+itoa(maxSandboxTimeout)+", counted from now; also the "+
			"lifetime later execution, file, background and binary tools renew it to (its lease, in a 2026-07-28 request). Default 300.", 1, maxSandboxTimeout), 300)),
		opt("envs", envsArg("Environment variables set in every process of the sandbox: names to string values. Never pass secrets: arguments may be visible to the model.")),
		opt("region", str("A region of the provider. Default: the provider's default.", 64, regionPattern)),
		opt("cpu", integer("vCPUs, a positive integer. Omitted: the template's or provider's default. Not every provider accepts it.", 1, maxCPU)),
		opt("memory", integer("Memory in MB, a positive integer. Omitted: the template's or provider's default. Not every provider accepts it.", 1, maxMemoryMB)),
		opt("provider", str("A configured provider ID. Default: the default provider.", 32, providerPattern)),
	)
	def := &mcp.Tool{
		Name: toolset.CreateSandbox,
		Description: "Create a sandbox and return its metadata; pass its sandbox_id to the other tools. In a 2026-07-28 " +
			"request the sandbox has a lease: it lives for timeout seconds (default 300) from its creation and from each " +
			"execution, file, background or binary call on it, nothing renews it in between, and it ends only with " +
			"kill_sandbox or when the lease runs out; only the caller that created it can reach it. In a 2025 session it " +
			"becomes the session's default sandbox and is owned by the session: it is destroyed when the session ends. Omitted resources keep the template's or provider's defaults; passing " +
			"validation does not mean the provider accepts a combination, and a rejection comes back as a categorized " +
			"error. Credentials live in the server's configuration, never in arguments. Returns the new sandbox's metadata.",
		InputSchema:  in,
		OutputSchema: metadataSchema("The new sandbox's metadata."),
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		timeout := time.Duration(a.integer("timeout", 0)) * time.Second
		opts := &sandbox.CreateOptions{
			Provider: a.str("provider"),
			Region:   a.str("region"),
			Template: a.str("template"),
			Timeout:  timeout,
			EnvVars:  a.strMap("envs"),
			CPUCount: int(a.integer("cpu", 0)),    // CREATE-2: 0 is not sent
			MemoryMB: int(a.integer("memory", 0)), // CREATE-2
		}
		if sess.modern != nil {
			rec, err := createLeased(ctx, deps, sess, opts) // LEASE-1
			if err != nil {
				return nil, err
			}
			info := rec.handle.Info()
			if fresh, err := rec.handle.RefreshInfo(ctx); err == nil {
				info = *fresh
			}
			return toMetadata(rec.handle.ID(), info), nil // CREATE-6
		}
		o, err := createOwned(ctx, deps, sess, opts)
		if err != nil {
			return nil, err
		}
		id := o.handle.ID()
		info := o.handle.Info()
		if !sess.isClosed() {
			if fresh, err := o.handle.RefreshInfo(ctx); err == nil {
				info = *fresh
			}
		}
		return toMetadata(id, deps.own.reported(o.handle, info)), nil // CREATE-6
	})
}

// createOwned creates a sandbox and adopts it as owned and default
// (CREATE-5). The create itself is not cancelled when the session closes
// (a cancelled create could leave a sandbox nobody knows); a sandbox whose
// session closed meanwhile is destroyed at once. Every create carries a
// fresh [CreateTagKey] metadata value: when the create fails without a
// definite answer, the sandboxes carrying it are found and destroyed. It
// also carries the owner's instance, boot and session ([InstanceTagKey]),
// and the new sandbox's ID is logged.
func createOwned(ctx context.Context, deps *Deps, sess *session, opts *sandbox.CreateOptions) (*ownedSandbox, error) {
	done, err := admitCreate(ctx, deps, sess, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	tag := createTagValue()
	opts.Metadata = deps.own.createMetadata(sess.seq, tag)   // ownership: instance, boot, session
	opts.Metadata[SessionPrincipalTagKey] = sess.principal() // HANDLE-1: bound to the session's principal
	requested := opts.Timeout
	opts.Timeout = deps.own.createTimeout(requested) // at most the owner lease
	h, err := deps.Platform.Create(context.WithoutCancel(ctx), opts)
	if err != nil {
		if ambiguousCreate(err) {
			checkLostCreate(deps, sess, tag, opts)
		}
		return nil, err
	}
	deps.Logger.Info("owned sandbox created", "session", sess.seq, "sandbox_id", h.ID(), "instance", deps.own.instance)
	renewal := requested
	if renewal == 0 {
		renewal = sandbox.DefaultSandboxTimeout // RENEW-1: 300 s when none
	}
	o, ok := sess.adopt(h.ID(), h, renewal)
	if !ok {
		job := ownedJob(sess.seq, h)
		if sess.reg != nil {
			sess.reg.startCleanup(job)
		} else {
			dctx, cancel := context.WithTimeout(context.Background(), deps.Limits.DestroyTimeout)
			_ = job.kill(dctx)
			cancel()
		}
		return nil, sessionClosedError()
	}
	deps.own.track(sess, h.ID(), o, requested)
	return o, nil
}

// codeTooManyCreates is the tool error code of a create beyond
// Limits.CreatesPerPrincipal.
const codeTooManyCreates = "too_many_creates"

// admitCreate counts one create against its principal's creates in flight
// (a modern request's principal, or a legacy session's): beyond
// Limits.CreatesPerPrincipal it is a rate_limited tool error and no call
// is made. With Limits.SandboxesPerPrincipal set, the principal's live
// sandboxes are counted too (checkLive). The returned done ends the count.
func admitCreate(ctx context.Context, deps *Deps, sess *session, opts *sandbox.CreateOptions) (done func(), err error) {
	if sess.reg == nil {
		return func() {}, nil
	}
	principal := sess.principal()
	if sess.modern != nil {
		principal = sess.modern.principal
	}
	limit := deps.Limits.CreatesPerPrincipal
	done, ok := sess.reg.beginCreate(principal, limit)
	if !ok {
		return nil, &ToolError{Category: sandbox.RateLimited, Code: codeTooManyCreates,
			Recovery: "this caller has " + itoa(limit) + " creates in flight, its limit: retry once one has finished"}
	}
	if err := checkLive(ctx, deps, sess.reg, principal, opts); err != nil { // QUOTA-4
		done()
		return nil, err
	}
	return done, nil
}

// checkLostCreate starts looking, in the background, for a sandbox that a
// create which failed without a definite answer may have left, by the
// create's nonce ([CreateTagKey]), for Limits.CreateCheckFor, and destroys
// what it finds. It is tracked like a close-time destroy.
func checkLostCreate(deps *Deps, sess *session, tag string, opts *sandbox.CreateOptions) {
	if sess.reg == nil {
		return
	}
	list := &sandbox.ListOptions{Provider: opts.Provider, Region: opts.Region, Metadata: map[string]string{CreateTagKey: tag}}
	job := &cleanupJob{session: sess.seq, tag: tag, lifetime: opts.Timeout, find: func(ctx context.Context) ([]string, error) {
		infos, err := deps.Platform.List(ctx, list)
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(infos))
		for _, in := range infos {
			ids = append(ids, in.SandboxID)
		}
		return ids, nil
	}}
	sess.reg.startCleanup(job)
}

// SetSandboxTimeout is set_sandbox_timeout (TIMEOUT-1..7). For an owned
// sandbox it calls the handle's SetTimeout and, once that succeeds, makes N
// the renewal policy; for an external ID it calls SetTimeoutByID without
// connecting or taking it over.
func SetSandboxTimeout(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		opt("sandbox_id", sandboxIDArg("The sandbox, bare or as provider:id. Required in a 2026-07-28 request; in a 2025 session, defaults to the session's default sandbox.")),
		req("timeout", integer("The sandbox's remaining lifetime in seconds, 1 to "+itoa(maxSandboxTimeout)+", counted from now.", 1, maxSandboxTimeout)),
	)
	out := object("",
		req("success", &jsonschema.Schema{Type: "boolean", Const: ptr[any](true)}),
		req("sandbox_id", &jsonschema.Schema{Type: "string"}),
		req("timeout", &jsonschema.Schema{Type: "integer"}),
	)
	def := &mcp.Tool{
		Name: toolset.SetSandboxTimeout,
		Description: "Set a sandbox's remaining lifetime to timeout seconds from now (not an HTTP timeout); a short " +
			"timeout ends the sandbox early. Without sandbox_id (2025 sessions only) it applies to the session's default sandbox; with no " +
			"default it fails and creates nothing. For a sandbox a 2025 session created, later execution and file tools " +
			"renew it to this timeout; a sandbox a 2026-07-28 request created keeps the lease it was created with, to which " +
			"the next such call renews it. A sandbox named by ID that the caller did not create is updated without being " +
			"taken over.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		id, err := target(deps.Platform, sess, a) // TIMEOUT-2
		if err != nil {
			return nil, err
		}
		n := a.integer("timeout", 0) // TIMEOUT-1: required and bounded by the schema
		d := time.Duration(n) * time.Second
		if sess.modern != nil {
			// HANDLE-1; the lease policy stays the one the sandbox was
			// created with, as its metadata does (LEASE-2).
			if _, err := deps.leases.lookup(ctx, deps, sess.modern.principal, id); err != nil {
				return nil, err
			}
			if err := deps.Platform.SetTimeoutByID(ctx, id, d, nil); err != nil {
				return nil, err
			}
		} else if o, ok := sess.ownedByID(id); ok {
			// TIMEOUT-3; on failure the previous policy stays (TIMEOUT-4).
			if err := deps.own.setTimeout(ctx, o.handle, d); err != nil { // at most the owner lease
				return nil, err
			}
			// TIMEOUT-5: a completion after close changes nothing.
			sess.setRenewal(id, o, d)
		} else if err := guardForeign(ctx, deps, sess, id); err != nil { // HANDLE-1
			return nil, err
		} else if err := deps.Platform.SetTimeoutByID(ctx, id, d, nil); err != nil { // TIMEOUT-6
			return nil, err
		}
		return struct {
			Success   bool   `json:"success"`
			SandboxID string `json:"sandbox_id"`
			Timeout   int64  `json:"timeout"`
		}{true, id, n}, nil // TIMEOUT-7
	})
}

// KillSandbox is kill_sandbox (SESSION-3): without sandbox_id it kills the
// default and clears it; an owned sandbox leaves the destroy set; an
// external ID is killed with KillByID, without connecting.
func KillSandbox(deps *Deps) Tool {
	deps = deps.withDefaults()
	in := object("",
		opt("sandbox_id", sandboxIDArg("The sandbox to kill, bare or as provider:id. Required in a 2026-07-28 request; in a 2025 session, defaults to the session's default sandbox.")),
	)
	out := object("",
		req("success", &jsonschema.Schema{Type: "boolean", Const: ptr[any](true)}),
		req("sandbox_id", &jsonschema.Schema{Type: "string"}),
	)
	def := &mcp.Tool{
		Name: toolset.KillSandbox,
		Description: "Destroy a sandbox and everything in it. Without sandbox_id (2025 sessions only) it kills the session's default " +
			"sandbox and clears the default; with no default it fails. A sandbox that is already gone is a not_found error.",
		InputSchema:  in,
		OutputSchema: out,
	}
	return newTool(def, func(ctx context.Context, sess *session, a args) (any, error) {
		id, err := target(deps.Platform, sess, a)
		if err != nil {
			return nil, err
		}
		if sess.modern != nil {
			if err := killModern(ctx, deps, sess.modern, id); err != nil {
				return nil, err
			}
		} else if o, ok := sess.ownedByID(id); ok {
			err := o.handle.Kill(ctx)
			if err == nil || isNotFound(err) {
				sess.disown(id, o, err != nil)
			}
			if err == nil {
				deps.Logger.Info("owned sandbox destroyed", "session", sess.seq, "sandbox_id", id, "by", "kill_sandbox")
			}
			if err != nil {
				return nil, err
			}
		} else if err := guardForeign(ctx, deps, sess, id); err != nil { // HANDLE-1
			return nil, err
		} else if err := deps.Platform.KillByID(ctx, id, nil); err != nil {
			return nil, err
		}
		return struct {
			Success   bool   `json:"success"`
			SandboxID string `json:"sandbox_id"`
		}{true, id}, nil
	})
}

// killModern is kill_sandbox in a modern request: another principal's
// sandbox is not_found (HANDLE-1); a leased one ends here (LEASE-3), and
// its record is dropped (its background commands end with it).
func killModern(ctx context.Context, deps *Deps, call *modernCall, id string) error {
	if _, err := deps.leases.lookup(ctx, deps, call.principal, id); err != nil {
		return err
	}
	defer deps.leases.forget(id)
	if err := deps.Platform.KillByID(ctx, id, nil); err != nil {
		return err
	}
	deps.Logger.Info("leased sandbox destroyed", "sandbox_id", id, "by", "kill_sandbox")
	return nil
}
