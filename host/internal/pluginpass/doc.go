// Package pluginpass holds the host-level tests of the real plugins: each compiled .wasm from
// plugins-wasm/ is loaded by the wasm loader and driven through the hook entry point (planner,
// runner, status, finalizers) against the in-process OpenStack (fakecloud) and Kubernetes
// (fakekube), the way shell-operator drives it: a binding-context file in; Kubernetes patches and
// cloud state out. The scenarios are the ones an operator meets: create, converge (no writes,
// requests counted), drift, adoption, notes, immutable fields, prune of an owned orphan, unowned
// resources kept, in-use resources kept with the finalizer held.
//
// It lives under host/ because Go lets only host/... import host/internal/...; it has no
// non-test code. TestMain builds the plugins with hack/build-plugins.sh (skipped when up to date)
// unless OPENSTACK_SYNC_PLUGINS_DIR names a directory of built plugins (make plugins).
package pluginpass
