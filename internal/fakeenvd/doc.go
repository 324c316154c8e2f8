// Package fakeenvd is a fake in-sandbox daemon (E2B envd) for one sandbox.
//
// A [Daemon] serves the envd HTTP surface — the Connect process and
// filesystem services, GET/POST /files and GET /health — from memory: files
// live in a [MemFS] tree and commands run in an in-process shell
// (mvdan.cc/sh/v3 interp) whose every hook is bound to that tree and whose
// commands are Go built-ins. No host process is ever started and the host
// filesystem is never touched.
//
// The fake provider creates one Daemon per sandbox and forwards that
// sandbox's envd requests to [Daemon.ServeHTTP].
package fakeenvd
