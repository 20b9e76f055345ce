// Package fakekube is a stateful in-process Kubernetes API for the fast test tier and the demo.
// It serves namespaced custom resources (loaded from CRD files) and core Secrets over loopback
// HTTPS (a kubeconfig carries its CA and token), faithfully enough for client-go: create, get, list, update, JSON and merge patches on the
// object and on its status subresource, and delete with finalizers.
//
// # Rules it keeps, as the real kube-apiserver does
//
//   - resourceVersion changes on every write; a write that changes nothing is skipped (no new
//     resourceVersion, no event).
//   - generation starts at 1 and grows when anything but metadata (and status, when status is a
//     subresource) changes, and once more when a delete marks the object terminating.
//   - With a status subresource, writes to the object ignore status and writes to /status ignore
//     everything else; status is dropped on create.
//   - A delete of an object with finalizers sets deletionTimestamp and keeps the object; it goes
//     when the last finalizer is removed, and the Deleted event carries the last stored state
//     (finalizer included). A terminating object accepts no new finalizer (422).
//   - Errors are metav1.Status bodies (404 NotFound and 409 AlreadyExists/Conflict with
//     details.name; 422 for a failed JSON-patch `test`); an unknown path is a plain-text
//     "404 page not found".
//
// Each rule is a scenario in scenarios_test.go that runs against the fake in the unit tier and,
// with build tag e2e, against a real kube-apiserver, so the fake cannot drift from it.
//
// Every change is appended to an event log (Added, Modified, Deleted) in the order a watcher
// would see it; package shelloperator turns that log into binding contexts.
//
// Not served: watches, server-side apply, strategic merge patch, schema validation, namespaces as
// objects (any namespace is accepted), RBAC.
package fakekube
