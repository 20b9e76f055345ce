#!/usr/bin/env bash
# Stops what hack/kube-up.sh STATE_DIR started (apiserver first, then etcd) and removes STATE_DIR.
#   usage: hack/kube-down.sh STATE_DIR
set -uo pipefail
state=${1:?usage: hack/kube-down.sh STATE_DIR}
[ -d "$state" ] || exit 0
stop() { # pidfile: TERM, then KILL after 10 s
  local f=$state/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}
stop apiserver
stop etcd
rm -rf "$state"
