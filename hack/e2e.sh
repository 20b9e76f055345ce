#!/usr/bin/env bash
# The real-parts tier (make e2e): real etcd + kube-apiserver, the real shell-operator and helm, the
# host and the wasm plugins, and real Keystone, Neutron and Ironic; then the Go tests in test/e2e.
#   usage: hack/e2e.sh
# Env:
#   CI=true               a would-be skip is a failure
#   OS_CHROOT             the OpenStack chroot (default /var/tmp/os-chroot; built on first use, ~4 min).
#                         A cloud already up there is used and left running; one this script starts
#                         is stopped at the end unless E2E_KEEP_OPENSTACK=1 (reruns then take ~3 min).
#   ETCD_PORT, ETCD_PEER_PORT, KUBE_API_PORT   as hack/kube-up.sh
#   E2E_ONLY_TEST_E2E=1   run only test/e2e (a developer's quicker loop; refused under CI=true)
#   E2E_RUN=REGEXP        with E2E_ONLY_TEST_E2E, only the test/e2e tests matching REGEXP (-test.run)
#   E2E_KEEP=1            keep the work folder (logs, kubeconfig, values) after a passing run
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
t0=$SECONDS
log() { echo "[e2e $((SECONDS - t0))s] $*" >&2; }
skip_or_fail() { # reason
  if [ "${CI:-}" = true ]; then log "FAIL: $1 (CI=true: the real-parts tier may not skip)"; exit 1; fi
  log "SKIP: $1"; exit 0
}

os_chroot=${OS_CHROOT:-/var/tmp/os-chroot}
work=$(mktemp -d /tmp/openstack-sync-e2e.XXXXXX)
os_started=
kube_started=
status=1

cleanup() {
  set +e
  [ -n "${tagged_pid:-}" ] && kill "$tagged_pid" 2>/dev/null
  [ -n "${collections_pid:-}" ] && kill "$collections_pid" 2>/dev/null
  if [ -f "$work/run/shell-operator.pid" ]; then
    so_pid=$(cat "$work/run/shell-operator.pid")
    # only if that pid is still our shell-operator, not a reused pid
    [ "$(cat "/proc/$so_pid/comm" 2>/dev/null)" = shell-operator ] && kill "$so_pid"
  fi
  [ -n "$kube_started" ] && hack/kube-down.sh "$work/kube"
  if [ -n "$os_started" ] && [ -z "${E2E_KEEP_OPENSTACK:-}" ]; then
    log "stopping OpenStack"
    bash hack/os-harness.sh down "$os_chroot" >>"$work/os-harness.log" 2>&1
  fi
  if [ "$status" = 0 ] && [ -z "${E2E_KEEP:-}" ]; then rm -rf "$work"; else log "logs kept in $work"; fi
}
trap cleanup EXIT

# OpenStack first, in the background: its cold start is mostly apt, which overlaps well with the
# Go builds below.
if bash hack/os-harness.sh status "$os_chroot" >/dev/null 2>&1; then
  log "using the OpenStack already up in $os_chroot"
else
  [ "$(id -u)" = 0 ] || skip_or_fail "the OpenStack harness (hack/os-harness.sh) needs root"
  log "starting OpenStack in $os_chroot (log $work/os-harness.log)"
  os_started=1
  bash hack/os-harness.sh up "$os_chroot" >"$work/os-harness.log" 2>&1 &
  os_pid=$!
fi

log "building the Kubernetes tools (cached)"
k8s_bin=$(hack/k8s-tools.sh)
log "building bin/openstack-sync and bin/plugins"
go build -trimpath -o bin/openstack-sync ./host/cmd/openstack-sync
# openstack-sync-dev serves test/e2e's Nautobot (the subnet pools' source of truth) on loopback.
go build -trimpath -o bin/openstack-sync-dev ./host/cmd/openstack-sync-dev
hack/build-plugins.sh bin/plugins
# The operator image (no container engine): built twice, the second time with its own plugin and host
# builds, and the digests must match; test/e2e's TestImage pushes, pulls and runs it.
log "building the operator image twice (hack/build-image.sh)"
image_digest=$(K8S_BIN=$k8s_bin PLUGINS_DIR=$repo/bin/plugins hack/build-image.sh "$work/image")
again=$(K8S_BIN=$k8s_bin hack/build-image.sh "$work/image-again")
if [ "$image_digest" != "$again" ]; then
  log "FAIL: the image is not reproducible: $image_digest, then $again (kept in $work/image, $work/image-again)"; exit 1
fi
rm -rf "$work/image-again"
log "operator image $image_digest (reproduced)"
log "compiling the e2e tests"
go test -tags e2e -c -o "$work/e2e.test" ./test/e2e

log "starting etcd + kube-apiserver"
kube_started=1
K8S_BIN=$k8s_bin hack/kube-up.sh "$work/kube"

if [ -n "$os_started" ]; then
  log "waiting for OpenStack"
  if ! wait "$os_pid"; then
    log "FAIL: hack/os-harness.sh up failed; last lines:"; tail -30 "$work/os-harness.log" >&2; exit 1
  fi
  tail -2 "$work/os-harness.log" >&2
fi
clouds=$(bash hack/os-harness.sh clouds "$os_chroot")

# Every e2e-tier test against the same parts: the OpenStack contract suite's real half first (it
# lists what the cloud holds, so it runs alone), then the whole path in test/e2e while the packages
# with e2e-tagged tests (API server only, their own groups and namespaces) run beside it: the
# lifecycle test mostly waits for shell-operator's 30 s hook interval.
export E2E_KUBECONFIG="$work/kube/kubeconfig" OPENSTACK_SYNC_E2E_CLOUDS="$clouds"
tagged=$(grep -rl --include='*_test.go' '^//go:build e2e' host test/plugins 2>/dev/null | xargs -r -n1 dirname | sort -u | sed 's|^|./|')
contract=./host/internal/openstack/contract
if [ -n "${E2E_ONLY_TEST_E2E:-}" ]; then
  [ "${CI:-}" = true ] && { log "FAIL: E2E_ONLY_TEST_E2E would skip e2e-tier packages under CI=true"; exit 1; }
  log "E2E_ONLY_TEST_E2E: not running $contract $tagged"; contract= tagged=
fi
set +e
: >"$work/e2e.log"
if [ -n "$contract" ]; then
  # TestCollections holds the embedded cloud to the real one collection by collection: it makes
  # only uniquely named objects and reads back only its own, so it runs beside test/e2e.
  log "go test $contract -run TestCollections (real cloud, in the background, log $work/collections.log)"
  (go test -count=1 -v -run TestCollections "$contract" >"$work/collections.log" 2>&1; echo $? >"$work/collections.rc") &
  collections_pid=$!
  log "go test $contract (real cloud)"
  go test -count=1 -v -skip TestCollections "$contract" 2>&1 | tee -a "$work/e2e.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status_other=1
  # The plugins' own scenarios against the real Neutron and Ironic (create, then a converged pass
  # that writes nothing), each compiled .wasm through the real session; uniquely named, cleaned up.
  log "go test ./host/internal/pluginpass -run TestRealCloud (real cloud)"
  OPENSTACK_SYNC_PLUGINS_DIR="$repo/bin/plugins" go test -count=1 -v -run TestRealCloud ./host/internal/pluginpass 2>&1 | tee -a "$work/e2e.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status_other=1
fi
if [ -n "$tagged" ]; then
  log "go test -tags e2e" $tagged "(in the background, log $work/tagged.log)"
  (go test -tags e2e -count=1 -v $tagged >"$work/tagged.log" 2>&1; echo $? >"$work/tagged.rc") &
  tagged_pid=$!
fi
log "running test/e2e"
(cd test/e2e && E2E_HELM="$k8s_bin/helm" E2E_IMAGE_LAYOUT="$work/image/layout" E2E_IMAGE_DIGEST="$image_digest" \
  E2E_SHELL_OPERATOR="$k8s_bin/shell-operator" E2E_HOST_BINARY="$repo/bin/openstack-sync" E2E_DEV_BINARY="$repo/bin/openstack-sync-dev" \
  E2E_PLUGINS_DIR="$repo/bin/plugins" E2E_CLOUDS_YAML="$clouds" E2E_CLOUD=local-admin E2E_SYSTEM_CLOUD=local-system \
  E2E_WORK_DIR="$work/run" "$work/e2e.test" -test.v -test.timeout 25m ${E2E_ONLY_TEST_E2E:+${E2E_RUN:+-test.run "$E2E_RUN"}}) 2>&1 | tee -a "$work/e2e.log"
status=${PIPESTATUS[0]}
if [ -n "${collections_pid:-}" ]; then
  wait "$collections_pid"; collections_pid=
  log "the embedded cloud against the real one (TestCollections):"; grep -E '^\s*--- (PASS|FAIL|SKIP)|^(ok|FAIL)' "$work/collections.log" >&2
  cat "$work/collections.log" >>"$work/e2e.log"
  [ "$(cat "$work/collections.rc")" = 0 ] || status_other=1
fi
if [ -n "$tagged" ]; then
  wait "$tagged_pid"; tagged_pid=
  log "e2e-tagged packages:"; cat "$work/tagged.log"; cat "$work/tagged.log" >>"$work/e2e.log"
  [ "$(cat "$work/tagged.rc")" = 0 ] || status_other=1
fi
[ -z "${status_other:-}" ] || status=1
set -e

echo
echo "== e2e summary ($((SECONDS - t0))s)"
grep -E '^\s*--- (PASS|FAIL|SKIP)' "$work/e2e.log" || true
if grep -qE '^\s*--- SKIP' "$work/e2e.log" && [ "${CI:-}" = true ]; then
  echo "FAIL: tests skipped under CI=true"; status=1
fi
# Top-level tests only (subtests are indented), as one plain closing line.
count() { grep -cE "$1" "$work/e2e.log" || true; } # grep -c exits 1 on no match
passed=$(count '^--- PASS'); failed=$(count '^--- FAIL'); skipped=$(count '^--- SKIP')
[ "$status" = 0 ] || [ "$failed" -gt 0 ] || failed=1
if [ "$status" = 0 ]; then echo "e2e: PASS"; else echo "e2e: FAIL (logs in $work)"; fi
echo "e2e: $passed passed, $failed failed, $skipped skipped"
exit "$status"
