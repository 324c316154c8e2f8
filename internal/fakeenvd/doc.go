// Package fakeenvd is a fake in-sandbox daemon (E2B envd) for one sandbox.
//
// A [Daemon] serves the envd 0.6 HTTP surface — the Connect process service
// (with PTYs and Process/Update), the filesystem service (with WatchDir and
// the polled watchers), GET/POST /files (multipart or octet-stream, gzip,
// X-Metadata-* file metadata, signed URLs) and GET /health — from memory: files
// live in a [MemFS] tree and commands run in an in-process shell
// (mvdan.cc/sh/v3 interp) whose every hook is bound to that tree and whose
// commands are Go built-ins (python3, python and node run on the
// interpreters of package fakecodeinterp, which also serves the sandbox's
// code interpreter: [Daemon.CodeInterpreter]). No host process is ever
// started and the host filesystem is never touched.
//
// The fake provider creates one Daemon per sandbox and forwards that
// sandbox's envd requests to [Daemon.ServeHTTP]. [Daemon.Close] is the
// sandbox going away: open streams are cut and later requests get the
// edge's 502. Differences from envd are listed in package fakeprovider.
package fakeenvd
