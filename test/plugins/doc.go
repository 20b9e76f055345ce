// Package plugins tests what the plugins ship besides their wasm code: the CRDs in crds/ and the
// manifests in examples/. The structural checks always run; the admission checks run the CRDs and
// examples through a real kube-apiserver (hack/kube-up.sh) when hack/k8s-tools.sh has built one.
//
// The host-level passes of the compiled plugins (wasm loader, hook entry point, in-process cloud
// and Kubernetes) need host/internal/... and so live in host/internal/pluginpass.
package plugins
