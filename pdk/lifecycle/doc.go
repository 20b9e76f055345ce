// Package lifecycle is the generic resource lifecycle of openstack-sync plugins, modelled on the
// OpenStack Resource Controller's generic controller: a plugin supplies small actuators (get by
// id, list for adoption, list for import, create, delete, reconcilers, a status writer) and the
// Driver runs the flows, so import, adoption, management policy, status.id and the Available and
// Progressing conditions behave the same in every plugin.
//
// The flows, as the Driver runs them. Reconcile (a live CR):
//
//	unmanaged without spec.import ──────────────────────────────► Terminal (InvalidConfiguration)
//	status.id ──► GetByID ──┬─ found ────────────────────────────► bound
//	                        ├─ gone, managed with spec.resource ─► adoption, then Create
//	                        └─ gone, otherwise ──────────────────► Terminal (UnrecoverableError)
//	import.id ──► GetByID ──┬─ found ────────────────────────────► bound
//	                        └─ missing ──────────────────────────► Terminal (UnrecoverableError)
//	import.filter ──► ListForImport ──┬─ one ────────────────────► bound
//	                                  ├─ none ───────────────────► Progressing (retried)
//	                                  └─ several ────────────────► Terminal (InvalidConfiguration)
//	spec.resource ──► ListForAdoption ──┬─ one ──────────────────► bound (adopted)
//	                                    ├─ several ──────────────► Terminal (UnrecoverableError)
//	                                    └─ none ─► Create (at most once) ─► bound
//	bound ──► (managed only) every Reconciler, results aggregated
//	      ──► StatusWriter: Available, status.resource; status.id is kept even when a later step failed
//
// Delete (a CR being deleted, under its finalizer):
//
//	unmanaged, or managedOptions.onDelete detach ────────────────► Done, OpenStack untouched
//	status.id ──► GetByID;  no status.id with spec.resource ──► ListForAdoption
//	nothing found ───────────────────────────────────────────────► Done
//	found ──► Delete ──► GetByID ──┬─ not found ─────────────────► Done (the finalizer may go)
//	                               └─ still there ───────────────► Progressing
//
// Every step returns a Progress: Done, Progressing (a message and a delay), a transient error
// (retried at the next run) or a terminal error (not retried until metadata.generation changes).
// Progresses aggregate like ORC's ReconcileStatus: every message and error is kept, the shortest
// delay wins, and an aggregate is terminal only when all its errors are.
package lifecycle
