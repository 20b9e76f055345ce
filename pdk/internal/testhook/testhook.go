// Package testhook gives the PDK's own packages what plugin code must not have from package pdk:
// a Context on a host of their choosing (pdktest's fake, a benchmark's replay), the host behind a
// Context, and the calls package experimental offers outside the stable API. Package pdk sets the
// functions when it is initialised; being internal, nothing outside pdk/ can import them, so they
// are not part of the PDK's public API.
package testhook

// NewContext returns a *pdk.Context backed by host (a value with the methods Config, Log and
// OpenStack of the PDK's host boundary) and the group cache (a new map when nil).
var NewContext func(host any, cache map[string]any) any

// HostOf returns the host behind a *pdk.Context.
var HostOf func(ctx any) any

// DecodeReconcile decodes a host reconcile input as the wasm entry point does and returns the
// *pdk.ReconcileRequest, so benchmarks measure the guest's own decoding path.
var DecodeReconcile func(input []byte) (any, error)

// SlowDecodes returns how many JSON values the PDK has handed to encoding/json so far.
var SlowDecodes func() int64

// EncodeResult encodes a *pdk.Result as the wasm entry point does and reports whether it is
// pdk.Recorded's.
var EncodeResult func(res any) (out []byte, recorded bool, err error)

// Unchanged asks the host's convergence memo about the reconcile of the *pdk.Context ctx.
var Unchanged func(ctx any, evidence [][]byte) bool

// Recorded returns the *pdk.Result that asks the host for the result it recorded.
var Recorded func() any

// DecodeJSON decodes data into v on the PDK's own decoders where they give encoding/json's result;
// strict refuses keys the target does not declare.
var DecodeJSON func(data []byte, v any, strict bool) error

// SkipStatus marks a *pdk.Metadata as that of a plugin that never reads the CR's status.
var SkipStatus func(m any)

// SkipsStatus reports whether a *pdk.Metadata is marked so.
var SkipsStatus func(m any) bool

// SetMemo sets what a *pdktest.Host answers to experimental.Unchanged.
var SetMemo func(host any, answer func(evidence [][]byte) bool)
