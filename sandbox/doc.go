// Package sandbox is the Go SDK for E2B and E2B-compatible sandbox platforms.
//
// A [Platform] holds the configured providers (the default "e2b" from the
// environment, others from a [Config] file) and makes the control-plane calls
// exactly as the platform defines them: [Platform.List], [Platform.Create],
// [Platform.GetInfoByID], [Platform.SetTimeoutByID], [Platform.KillByID] and
// [Platform.Connect]. Create and Connect return a managed [*Sandbox] handle
// with RefreshInfo, SetTimeout and Kill.
//
// The by-ID calls run on temporary transport resources that are released
// before they return, never call connect and never build an in-sandbox
// client, so they are safe for sandboxes the caller does not own.
//
// Every failure is an [*Error] with a fixed [Category]. Its text never holds
// the platform's message, a URL, an API key or an access token.
//
// Sandbox IDs may be qualified as "provider:id"; [Platform.ParseID] and
// [Platform.FormatID] are the one place that reads and writes that form, and
// the platform only ever sees the bare ID.
package sandbox
