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
package envdapi
