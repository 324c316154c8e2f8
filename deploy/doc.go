// Package deploy holds sandboxkit's deployment example: an HAProxy
// configuration that keeps each Streamable HTTP session on the replica that
// created it (haproxy.cfg), a script that runs two replicas behind it on
// loopback (local-cluster.sh), and the end-to-end test of both. See
// docs/deploy.md.
package deploy
