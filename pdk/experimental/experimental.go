// Package experimental holds the PDK's calls that exist for speed alone: a plugin is correct
// without any of them, and each may change or go in any release as the host's performance work
// moves on (docs/pdk.md, "Experimental: calls for speed"). They sit apart from package pdk so
// that its stable API promises only what every plugin needs. The API check of pdk/API_BASELINE
// still covers them: a change here is made on purpose, not by accident.
package experimental

import (
	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
)

// Unchanged asks the host whether this reconcile may end at once with Recorded: whether the host
// last saw exactly this CR input (spec, status, generation) together with exactly this evidence
// in a reconcile of the same module and configuration that succeeded without a write, no longer
// ago than the memo's maximum age (docs/abi.md, "The convergence memo").
//
// The evidence MUST be everything in OpenStack the plugin's verdict on the CR rests on, as it
// read it: the resource's JSON as the list or GET returned it, the microversion it compared at,
// every related object it compares. Evidence it leaves out can hide a change until the record
// expires (pdktest.RequireCompleteEvidence proves it complete). The plugin SHOULD call Unchanged
// once per reconcile, after its reads and before the decoding and comparing it wants to spare,
// and, when it reports true, return Recorded immediately. When it reports false the plugin
// reconciles in full; the host then records the outcome if nothing was written. Outside
// Reconcile, in tests with a Backend that has no memo, and with the memo turned off, it reports
// false.
func Unchanged(ctx *pdk.Context, evidence ...[]byte) bool { return testhook.Unchanged(ctx, evidence) }

// Recorded is the Result a Reconcile returns after Unchanged reported true: the host reports the
// result it recorded for the CR (its notes, extra status and lifecycle status). Returning it
// without that is a protocol error and fails the CR.
func Recorded() *pdk.Result { return testhook.Recorded().(*pdk.Result) }

// DecodeJSON decodes data into v (a non-nil pointer) exactly as json.Unmarshal does, on the PDK's
// own decoders wherever that gives the same result (RATIONALE.md, "Why are there hand-written
// JSON decoders"). A plugin that keeps JSON as it came (a json.RawMessage member, a list page's
// items) and decodes parts of it later uses this rather than encoding/json, whose per-byte
// scanner costs far more in the sandbox.
func DecodeJSON(data []byte, v any) error { return testhook.DecodeJSON(data, v, false) }

// DecodeJSONStrict is DecodeJSON that refuses an object key the target struct does not declare,
// as pdk.ReconcileRequest.DecodeSpec does (the error names the key).
func DecodeJSONStrict(data []byte, v any) error { return testhook.DecodeJSON(data, v, true) }

// SkipStatus declares in m that the plugin's Reconcile never reads ReconcileRequest.Status: the
// host then leaves the CR's status out of every reconcile input (metadata skip_status), which
// spares the guest decoding it for every CR (docs/abi.md). Status is always nil for such a
// plugin. Call it on the Metadata before pdk.Register. A Lifecycle plugin cannot use it (the
// lifecycle finds its resource by status.id); Metadata.StatusKeys is the stable way to read
// only part of the status.
func SkipStatus(m *pdk.Metadata) { testhook.SkipStatus(m) }

// SkipsStatus reports whether SkipStatus was called on m, for a plugin's own tests.
func SkipsStatus(m *pdk.Metadata) bool { return testhook.SkipsStatus(m) }
