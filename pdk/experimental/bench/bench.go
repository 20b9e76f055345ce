// Package bench measures a plugin's own work, natively, as the host's benchmarks need it
// (docs/benchmarks.md, "Guest-side fixes"): a Backend that answers fixed bodies (Replay), the
// wasm entry point's decode-reconcile-encode path (ReconcileInput), CPU per CR (BenchmarkGroup,
// CPUClock) and the count of values that left the PDK's own decoders (SlowDecodes). It is
// experimental, as package experimental is: for speed work, free to change in any release.
package bench

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// Replay is a pdktest.Backend for benchmarks of a plugin's own work: it answers each request with a fixed
// body, keyed by "METHOD path?query" (the query as url.Values.Encode writes it, for the pages of a
// paginated list) or else "METHOD path" (404 when neither), exactly as the wasm host hands bodies
// over, so no fake cloud's work is measured. It encodes each request as the guest does for the host.
type Replay struct {
	Bodies map[string][]byte
	// Requests counts the requests answered.
	Requests int
	// Memo, when set, answers experimental.Unchanged as the host's convergence memo does, for
	// ReconcileInput's CRs: a reconcile that succeeded without a write records its input and
	// evidence, and the same input with the same evidence is a hit from then on. Without it
	// Unchanged always reports false.
	Memo bool
	// Hits counts the Unchanged calls that reported true.
	Hits int

	memo map[string]replayRecord
	call replayCall
}

type replayRecord struct {
	evidence uint64
	notes    []string
}

// replayCall is the memo's view of the reconcile in progress.
type replayCall struct {
	active   bool
	input    []byte
	evidence uint64
	asked    bool
	hit      *replayRecord
	wrote    bool
}

var replaySeed = maphash.MakeSeed()

// Unchanged implements the PDK's memo for a Replay with Memo set.
func (r *Replay) Unchanged(evidence [][]byte) bool {
	if !r.Memo || !r.call.active {
		return false
	}
	var h maphash.Hash
	h.SetSeed(replaySeed)
	for _, e := range evidence {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(e)))
		h.Write(n[:])
		h.Write(e)
	}
	r.call.asked, r.call.evidence, r.call.hit = true, h.Sum64(), nil
	if rec, ok := r.memo[string(r.call.input)]; ok && rec.evidence == r.call.evidence {
		r.call.hit = &rec
		r.Hits++
	}
	return r.call.hit != nil
}

// Config implements pdktest.Backend: no configuration.
func (r *Replay) Config(string) (string, bool) { return "", false }

// Log implements pdktest.Backend: dropped.
func (r *Replay) Log(pdk.LogLevel, string) {}

// OpenStack implements pdktest.Backend.
func (r *Replay) OpenStack(req *pdk.Request) (*pdk.Response, error) {
	r.Requests++
	if req.Method != "GET" && req.Method != "HEAD" {
		r.call.wrote = true
	}
	if _, err := json.Marshal(struct {
		Service, Method, Path, Microversion string
		Query                               map[string][]string
		Body                                any
	}{req.Service, req.Method, req.Path, req.Microversion, req.Query, req.Body}); err != nil {
		return nil, err
	}
	if len(req.Query) > 0 {
		if b, ok := r.Bodies[req.Method+" "+req.Path+"?"+url.Values(req.Query).Encode()]; ok {
			return &pdk.Response{StatusCode: 200, Body: b}, nil
		}
	}
	if b, ok := r.Bodies[req.Method+" "+req.Path]; ok {
		return &pdk.Response{StatusCode: 200, Body: b}, nil
	}
	return &pdk.Response{StatusCode: 404, Body: []byte(`{"NeutronError": {"message": "not found"}}`)}, nil
}

// ReconcileInput runs the registered plugin's Reconcile on one input as the wasm entry point
// does: decode the host's message, run the handler with a Context on h and the group cache,
// encode the result. It returns the result's notes.
//
// With a *Replay whose Memo is set, the reconcile takes part in its convergence memo as a host's
// would: a Recorded result answers with the notes recorded, and a Recorded result without a hit
// is an error.
func ReconcileInput(h pdktest.Backend, cache map[string]any, input []byte) ([]string, error) {
	req, err := testhook.DecodeReconcile(input)
	if err != nil {
		return nil, fmt.Errorf("reconcile: decoding input: %w", err)
	}
	r, memo := h.(*Replay)
	if memo = memo && r.Memo; memo {
		r.call = replayCall{active: true, input: input}
		defer func() { r.call = replayCall{} }()
	}
	res, err := pdk.Registered().Reconcile(testhook.NewContext(h, cache).(*pdk.Context), req.(*pdk.ReconcileRequest))
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &pdk.Result{}
	}
	_, recorded, err := testhook.EncodeResult(res)
	if err != nil {
		return nil, err
	}
	switch {
	case recorded && (!memo || r.call.hit == nil):
		return nil, errors.New("reconcile returned experimental.Recorded without an Unchanged that reported true")
	case recorded:
		return r.call.hit.notes, nil
	case memo && r.call.asked && !r.call.wrote:
		if r.memo == nil {
			r.memo = map[string]replayRecord{}
		}
		r.memo[string(input)] = replayRecord{evidence: r.call.evidence, notes: res.Notes}
	}
	return res.Notes, nil
}

// BenchmarkGroup reconciles inputs, the CRs of one converged credential group, once per benchmark
// iteration with a group cache from newCache (nil: an empty one), fails when a CR errs or gets
// notes (it is meant to be converged), and reports process CPU per CR (cpu-µs/CR, which load
// from other processes does not inflate) and requests per CR (requests/CR).
func BenchmarkGroup(b *testing.B, h *Replay, inputs [][]byte, newCache func() map[string]any) {
	b.Helper()
	b.ReportAllocs()
	cpu := CPUClock()
	for b.Loop() {
		h.Requests = 0
		var cache map[string]any
		if newCache != nil {
			cache = newCache()
		}
		if cache == nil {
			cache = map[string]any{}
		}
		for _, in := range inputs {
			notes, err := ReconcileInput(h, cache, in)
			if err != nil {
				b.Fatal(err)
			}
			if len(notes) > 0 {
				b.Fatalf("a converged CR got notes: %s", strings.Join(notes, "; "))
			}
		}
	}
	n := float64(len(inputs))
	b.ReportMetric(float64(CPUClock()-cpu)/1e3/float64(b.N)/n, "cpu-µs/CR")
	b.ReportMetric(float64(h.Requests)/n, "requests/CR")
}

// LiveHeapGrowth returns how much more live heap there is after fn ran than before, each read
// after a collection: what a group's cache keeps, for a test holding a plugin's view to a
// budget of the guest's memory (natively: a Go guest's sizes are the same, 64-bit). What fn
// builds must stay reachable from outside it (the group cache) until LiveHeapGrowth returns.
func LiveHeapGrowth(fn func()) int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	fn()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc) - int64(before)
}

// SlowDecodes returns how many JSON values the PDK has decoded with encoding/json instead of its
// own decoders since the process started (input it does not take: see docs/pdk.md, "What the
// sandbox gives you"). A plugin's test can hold its converged path to none: in the sandbox
// encoding/json costs several times as much.
func SlowDecodes() int64 { return testhook.SlowDecodes() }

// RequireNoSlowDecodes reconciles inputs as one credential group on h (as BenchmarkGroup does,
// failing t when a CR errs or gets notes) and fails t when any value of the pass went to
// encoding/json: a plugin's test holds its converged path to the PDK's decoders with it.
func RequireNoSlowDecodes(t testing.TB, h pdktest.Backend, inputs [][]byte) {
	t.Helper()
	cache := map[string]any{}
	slow := SlowDecodes()
	for i, in := range inputs {
		notes, err := ReconcileInput(h, cache, in)
		if err != nil || len(notes) > 0 {
			t.Fatalf("CR %d is not converged: %v %v", i, err, notes)
		}
	}
	if n := SlowDecodes() - slow; n != 0 {
		t.Errorf("%d JSON values of a converged pass over %d CRs went to encoding/json", n, len(inputs))
	}
}

// ReportConvergedRequests runs reconcileGroup once per benchmark iteration with h's record reset,
// fails the benchmark when a run writes (the group is meant to be converged already) and reports
// the requests one run cost as requests/group.
func ReportConvergedRequests(b *testing.B, h *pdktest.Host, reconcileGroup func() error) {
	b.Helper()
	requests := 0
	for b.Loop() {
		h.Reset()
		if err := reconcileGroup(); err != nil {
			b.Fatal(err)
		}
		if w := h.Writes(); len(w) > 0 {
			b.Fatalf("a converged group wrote: %v", w)
		}
		requests = len(h.Calls())
	}
	b.ReportMetric(float64(requests), "requests/group")
}
