#!/usr/bin/env bash
# Starts a real etcd + kube-apiserver on loopback for the real-parts tier (no scheduler, no kubelet:
# objects are stored and served, pods never run).
#   usage: hack/kube-up.sh STATE_DIR
# Writes STATE_DIR/kubeconfig (admin, system:masters) and STATE_DIR/{etcd,apiserver}.pid; logs go to
# STATE_DIR/{etcd,apiserver}.log. Stop it with hack/kube-down.sh STATE_DIR.
# Env: K8S_BIN (the folder hack/k8s-tools.sh prints; built when unset), ETCD_PORT (12379),
# ETCD_PEER_PORT (12380), KUBE_API_PORT (16443).
set -euo pipefail
state=${1:?usage: hack/kube-up.sh STATE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
bin=${K8S_BIN:-$("$here/k8s-tools.sh")}
etcd_port=${ETCD_PORT:-12379}
etcd_peer_port=${ETCD_PEER_PORT:-12380}
api_port=${KUBE_API_PORT:-16443}

for p in "$etcd_port" "$etcd_peer_port" "$api_port"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "kube-up: port $p on 127.0.0.1 is already in use (set ETCD_PORT, ETCD_PEER_PORT or KUBE_API_PORT)" >&2
    exit 1
  fi
done

mkdir -p "$state/etcd" "$state/certs"
state=$(cd "$state" && pwd)
openssl genrsa -out "$state/sa.key" 2048 2>/dev/null
openssl rsa -in "$state/sa.key" -pubout -out "$state/sa.pub" 2>/dev/null
token=$(openssl rand -hex 16)
echo "$token,admin,admin-uid,\"system:masters\"" > "$state/tokens.csv"

"$bin/etcd" --name test --data-dir "$state/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "test=http://127.0.0.1:$etcd_peer_port" --unsafe-no-fsync --log-level warn \
  > "$state/etcd.log" 2>&1 &
echo $! > "$state/etcd.pid"

# --endpoint-reconciler-type none: the "kubernetes" Endpoints may not point at loopback.
# --disable-admission-plugins ServiceAccount: there is no token controller to satisfy it.
"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$state/certs" \
  --token-auth-file "$state/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc \
  --service-account-key-file "$state/sa.pub" --service-account-signing-key-file "$state/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 --disable-admission-plugins ServiceAccount \
  --enable-priority-and-fairness=false --profiling=false --endpoint-reconciler-type none \
  > "$state/apiserver.log" 2>&1 &
echo $! > "$state/apiserver.pid"

cat > "$state/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: test, context: {cluster: test, user: admin, namespace: default}}]
current-context: test
KC

# Ready means readyz answers ok and the default namespace exists (the apiserver creates it after
# readyz first turns ok).
for _ in $(seq 1 600); do
  if curl -sk -H "Authorization: Bearer $token" "https://127.0.0.1:$api_port/readyz" | grep -qx ok &&
    [ "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
      "https://127.0.0.1:$api_port/api/v1/namespaces/default")" = 200 ]; then
    echo "kube-up: kube-apiserver ready on https://127.0.0.1:$api_port (kubeconfig $state/kubeconfig)" >&2
    exit 0
  fi
  for pidfile in etcd apiserver; do
    if ! kill -0 "$(cat "$state/$pidfile.pid")" 2>/dev/null; then
      echo "kube-up: $pidfile exited; last lines of $state/$pidfile.log:" >&2
      tail -30 "$state/$pidfile.log" >&2
      exit 1
    fi
  done
  sleep 0.1
done
echo "kube-up: kube-apiserver not ready after 60s; last lines of $state/apiserver.log:" >&2
tail -30 "$state/apiserver.log" >&2
exit 1
