// Package pluginpass holds the host-level tests of the real plugins: each compiled .wasm from
// plugins-wasm/ is loaded by the wasm loader and driven through the hook entry point (planner,
// runner, status, finalizers) against an in-process Kubernetes (fakekube) and an OpenStack, the
// way shell-operator drives it: a binding-context file in; Kubernetes patches and cloud state out.
// The scenarios are the ones an operator meets: create, converge (no writes, requests counted),
// drift, adoption, notes, immutable fields, prune of an owned orphan, unowned resources kept,
// in-use resources kept with the finalizer held.
//
// One scenario table (scenarios_test.go) runs on two clouds: TestScenarios against the in-process
// OpenStack (fakecloud), TestRealCloud against the real Keystone, Neutron and Ironic of
// hack/os-harness.sh when OPENSTACK_SYNC_E2E_CLOUDS names its clouds.yaml. Scenarios seed and read
// back through the OpenStack API so the same code serves both; the few the real servers cannot
// play say why in the table or next to the fake-only step.
//
// It lives under host/ because Go lets only host/... import host/internal/...; it has no
// non-test code. TestMain builds the plugins with hack/build-plugins.sh (skipped when up to date)
// unless OPENSTACK_SYNC_PLUGINS_DIR names a directory of built plugins (make plugins).
package pluginpass
