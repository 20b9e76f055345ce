#!/usr/bin/env bash
# Builds the real Kubernetes test tools (kube-apiserver, etcd, kubectl, shell-operator, helm) from the
# Go module proxy into a version-keyed cache folder outside the repository, so a kept machine builds
# them once. Prints the bin folder on stdout; progress goes to stderr.
#   usage: hack/k8s-tools.sh            (build what is missing, print the bin dir)
# Env: K8S_TOOLS_DIR (default $(go env GOPATH)/openstack-sync-tools)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KUBE_VERSION=v1.34.4
SHELL_OPERATOR_VERSION=v1.20.2
HELM_VERSION=v3.22.0
root=${K8S_TOOLS_DIR:-$(go env GOPATH)/openstack-sync-tools}
bin="$root/kube-$KUBE_VERSION-so-$SHELL_OPERATOR_VERSION-helm-$HELM_VERSION/bin"
mkdir -p "$bin"
log() { echo "[k8s-tools] $*" >&2; }

build() { # name, then the build command; skips a tool that is already there
  local name=$1; shift
  if [ -x "$bin/$name" ]; then return 0; fi
  log "building $name (cold builds take minutes)"
  local t0=$SECONDS
  "$@" >&2
  log "built $name in $((SECONDS - t0))s"
}

kv=${KUBE_VERSION#v}; kmajor=${kv%%.*}; kminor=${kv#*.}; kminor=${kminor%%.*}
kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=$kmajor -X k8s.io/component-base/version.gitMinor=$kminor"
(cd "$here/k8s-tools/kube" &&
  build kube-apiserver go build -trimpath -ldflags "$kube_ldflags" -o "$bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver &&
  build etcd go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3 &&
  build kubectl go build -trimpath -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=$kmajor -X k8s.io/client-go/pkg/version.gitMinor=$kminor" -o "$bin/kubectl" k8s.io/kubernetes/cmd/kubectl)
# One build, static, because the operator image has no C library (hack/build-image.sh); the tests run
# the same binary the image ships. (A second, dynamic build cost about 2.5 minutes of a cold CI run.)
(cd "$here/k8s-tools/shell-operator" &&
  build shell-operator-static env CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/flant/shell-operator/pkg/app.Version=$SHELL_OPERATOR_VERSION" -o "$bin/shell-operator-static" github.com/flant/shell-operator/cmd/shell-operator)
[ -x "$bin/shell-operator" ] || ln -f "$bin/shell-operator-static" "$bin/shell-operator"
hv="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
hv="$hv -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$kmajor -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kminor"
hv="$hv -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$kmajor -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kminor"
build helm env GOBIN="$bin" go install -trimpath -ldflags "-s -w $hv" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
echo "$bin"
