// Package deploy holds sandboxkit's deployment examples: an HAProxy
// configuration that keeps each 2025 Streamable HTTP session on the replica
// that created it (haproxy.cfg), one of plain round robin for 2026-07-28
// requests, which have no session (haproxy-modern.cfg), a script that runs
// two replicas behind either on loopback (local-cluster.sh), and the
// end-to-end tests. See docs/deploy.md.
package deploy
