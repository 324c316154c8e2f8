#!/usr/bin/env bash
# local-cluster.sh: two sandboxkit replicas behind HAProxy, on loopback.
#
# It starts replica-0 and replica-1 ("sandboxkit serve --http ... --instance
# replica-N"), waits until both answer /healthz, then runs HAProxy with
# deploy/haproxy.cfg in the foreground of this script. SIGTERM or SIGINT
# stops HAProxy and shuts both replicas down (each destroys its sessions'
# sandboxes). The provider comes from the environment as for "sandboxkit
# serve" (E2B_API_KEY, E2B_API_URL, ...), e.g. from "sandboxkit fake-provider".
#
# Environment:
#   SANDBOXKIT_BIN        the sandboxkit binary (default: sandboxkit on PATH)
#   SANDBOXKIT_LB_ADDR    the proxy's address (default 127.0.0.1:8080)
#   SANDBOXKIT_REPLICA_0  replica-0's address (default 127.0.0.1:8081)
#   SANDBOXKIT_REPLICA_1  replica-1's address (default 127.0.0.1:8082)
#   SANDBOXKIT_SERVE_ARGS more serve flags, e.g. "--provider-timeout 5s"
#   SANDBOXKIT_HAPROXY_CFG the HAProxy configuration (default haproxy.cfg,
#                         sticky sessions for 2025 clients; haproxy-modern.cfg
#                         is plain round robin for 2026-07-28 clients)
#
# Example:
#   sandboxkit fake-provider > fake.env & sleep 1; set -a; . ./fake.env; set +a
#   deploy/local-cluster.sh &
#   sandboxkit conform --server-url http://127.0.0.1:8080/mcp ...
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${SANDBOXKIT_BIN:-sandboxkit}
export SANDBOXKIT_LB_ADDR=${SANDBOXKIT_LB_ADDR:-127.0.0.1:8080}
export SANDBOXKIT_REPLICA_0=${SANDBOXKIT_REPLICA_0:-127.0.0.1:8081}
export SANDBOXKIT_REPLICA_1=${SANDBOXKIT_REPLICA_1:-127.0.0.1:8082}
read -r -a extra <<<"${SANDBOXKIT_SERVE_ARGS:-}"

pids=()
stop() {
	trap - TERM INT EXIT
	# TERM lets each replica destroy its sessions' sandboxes before it exits.
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop TERM INT EXIT

for i in 0 1; do
	var=SANDBOXKIT_REPLICA_$i
	"$bin" serve --http "${!var}" --instance "replica-$i" "${extra[@]}" &
	pids+=($!)
done
# A replica listens once its start sweep is done: wait for each port.
listening() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
for i in 0 1; do
	var=SANDBOXKIT_REPLICA_$i
	for _ in $(seq 1 300); do
		listening "${!var}" && break
		sleep 0.05
	done
	listening "${!var}" || { echo "local-cluster: replica-$i not listening on ${!var}" >&2; exit 1; }
done

# -db: stay in the foreground; -W: master-worker, so TERM stops it cleanly.
haproxy -db -W -f "$here/${SANDBOXKIT_HAPROXY_CFG:-haproxy.cfg}" &
pids+=($!)
wait -n "${pids[@]}"
