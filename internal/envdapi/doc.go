// Package envdapi holds the wire types of the in-sandbox daemon (envd): the
// process and filesystem Connect services spoken as proto3 JSON, and the
// error bodies of its plain HTTP endpoints.
//
// The types are plain Go structs for encoding/json, shaped so that their JSON
// is what protojson produces and accepts: lowerCamelCase keys, int64 values as
// strings ([Int64]), enums as names ([FileType], [Signal]), oneofs as pointer
// fields of which exactly one is set, zero values omitted. The SDK's client
// and the fake provider's daemon both use them, and [Codec] lets
// connectrpc.com/connect carry them.
//
// Wire-type policy. The envd types are shared on purpose: the daemon's
// protocol is generated from one proto file upstream, our SDK and our fake
// must agree with it field for field, and a shared struct makes a field the
// two disagree on impossible rather than merely tested. The control-plane
// types are the opposite: package sandbox and package fakeprovider each keep
// their own copy of the platform's JSON (sandbox/info.go, fakeprovider/wire.go).
// That duplication is deliberate: the fake stands in for the platform, so a
// change to what the SDK sends must be seen by the fake as the platform would
// see it (an unknown field refused, a missing one defaulted), and the SDK's
// tests against the fake then check the SDK against the platform's schema,
// not against itself. The official SDKs' compatibility checks (compat/)
// hold both copies to what the platform really sends.
package envdapi
