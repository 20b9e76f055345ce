// Package layering holds no code: its test checks the import rules of the host with `go list
// -deps`, so a change that breaks one fails `make test` instead of waiting for a reviewer.
//
//   - The framework packages (planning, grouping, finalizers, status, the hook protocol) link
//     neither client-go nor apimachinery, wazero nor gophercloud: they see Kubernetes, plugins
//     and OpenStack only through small interfaces and the plain values of package kubeapi.
//   - The production binary, host/cmd/openstack-sync, links no test fake or test double: the demo
//     and the in-process cloud and Kubernetes are in host/cmd/openstack-sync-dev.
//   - Neither it, the framework nor the sandbox links the benchmark's native runner
//     (nativeplugin), whose plugins are not contained: only host/cmd/openstack-sync-native does.
//   - wazero stays in package wasm, gophercloud in package openstack, client-go in package kube;
//     the module cache, the convergence memo and the admission of a module's bytes (modulecache,
//     memo, wasm/admission) link none of them.
//   - Of the PDK's module the host links only the shared ABI (pdk/abi: the messages, rules and
//     limits both sides apply), which links only the standard library; the PDK's and the plugins'
//     modules never require the host's.
package layering
