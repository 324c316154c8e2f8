#!/usr/bin/env bash
# Acceptance by planted bugs: applies each patch of this folder (a bug
# planted in server/ or sandbox/, never in the kit) to a throw-away copy
# of the committed tree and runs the kit's main command against it; a
# patch is "caught" when the command fails. See README.md.
#
#   run.sh [--focused] [--runs N] [NAME ...]
#
# --focused   run only the specs a patch names (its "Specs:" line), over a
#             server command when its "Target: process" line says so;
#             without it, the plain "go run ./cmd/sandboxkit conform".
# --runs N    run each patch N times (default 1).
# NAME        patches to run (default: all).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
focused=0
runs=1
names=()
while [ $# -gt 0 ]; do
	case "$1" in
	--focused) focused=1 ;;
	--runs) runs=$2; shift ;;
	*) names+=("$1") ;;
	esac
	shift
done
if [ ${#names[@]} -eq 0 ]; then
	for p in "$here"/*.patch; do names+=("$(basename "$p" .patch)"); done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for name in "${names[@]}"; do
	patch="$here/$name.patch"
	tree="$work/$name"
	mkdir -p "$tree"
	git -C "$root" archive HEAD | tar -x -C "$tree"
	if ! (cd "$tree" && git apply "$patch" && go build ./server ./sandbox); then
		echo "$name: NOT CAUGHT: the patch does not apply or build"
		continue
	fi
	args=(conform)
	if [ $focused = 1 ]; then
		specs=$(sed -n 's/^Specs: //p' "$patch")
		case "$specs" in
		"("*) echo "$name: no spec on this branch names it ($specs)"; continue ;;
		esac
		args+=(--label-filter "$(echo "$specs" | sed 's/, */ || /g')")
		if grep -q '^Target: process' "$patch"; then
			(cd "$tree" && go build -o "$tree/planted-server" ./cmd/sandboxkit) || true
			args+=(--server-cmd "$tree/planted-server serve")
		fi
	fi
	caught=0
	for _ in $(seq "$runs"); do
		if (cd "$tree" && go run ./cmd/sandboxkit "${args[@]}" >"$tree/conform.log" 2>&1); then
			:
		else
			caught=$((caught + 1))
		fi
	done
	# A FAIL line names its spec, or the next line lists the specs it groups.
	failed=$(grep -A1 '^  FAIL' "$tree/conform.log" | grep -oE '\b[a-z]+\.[a-z0-9-]+(@[0-9-]+)?' | grep -v '^\(e\.g\|i\.e\)' | sort -u | tr '\n' ' ' || true)
	if [ "$caught" = "$runs" ]; then
		echo "$name: caught $caught of $runs (${failed:-see the log})"
	else
		echo "$name: NOT CAUGHT in $((runs - caught)) of $runs runs"
	fi
	rm -rf "$tree"
done
