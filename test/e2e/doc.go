// Package e2e is the real-parts tier: the chart installed into a real kube-apiserver, the real
// shell-operator running the host and the wasm plugins as the chart configures them, and real
// Keystone, Neutron and Ironic. Its tests carry the e2e build tag and are run by hack/e2e.sh, which
// starts those parts and passes their locations in E2E_* variables.
package e2e
