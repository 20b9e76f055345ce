package pdktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
)

// RequireCompleteEvidence proves that the evidence a plugin hands the host's convergence memo
// (Context.Unchanged, docs/abi.md "The convergence memo") covers everything its verdict on one
// converged CR rests on. Evidence that leaves out a field the plugin compares lets the memo answer
// with the old result while OpenStack changed, until the record expires
// (OPENSTACK_SYNC_MEMO_MAX_AGE).
//
// It reconciles cr once against opts (which must answer a converged CR: the reconcile writes
// nothing and asks Unchanged), keeping every JSON answer it read from OpenStack and from sources.
// Then, one at a time, it changes each field of each answer (a value changed, a member removed, a
// list's first element dropped) and reconciles cr again in full against the recorded answers with
// that one change. The memo must miss (the plugin's evidence differs), or else the change must not
// matter: the full reconcile's result, error and writes are those of the first. t fails naming
// each field where neither holds.
//
// opts answers as in New (Script, Handler, Cloud, Sources); the memo never hits, and each
// reconcile gets a group cache of its own.
func RequireCompleteEvidence(t testing.TB, opts Options, cr CR) {
	t.Helper()
	rec := &answers{byKey: map[string][]*recorded{}}
	base := evidenceRun(t, rec.recording(t, opts), cr)
	switch {
	case base.err != nil:
		t.Fatalf("pdktest.RequireCompleteEvidence: the first reconcile failed: %v", base.err)
	case len(base.writes) > 0:
		t.Fatalf("pdktest.RequireCompleteEvidence: the CR is not converged: its reconcile wrote %s", strings.Join(base.writes, ", "))
	case len(base.evidence) == 0:
		t.Fatalf("pdktest.RequireCompleteEvidence: the plugin never asked the memo (Context.Unchanged) for this CR: nothing to prove")
	}
	last := base.evidence[len(base.evidence)-1]
	// The recorded answers, replayed unchanged, must give the same reconcile: else a change below
	// could not be told from the plugin's own variation.
	if again := evidenceRun(t, rec.replaying(t, opts, nil, nil), cr); !again.same(base) ||
		!slices.ContainsFunc(again.evidence, func(e [][]byte) bool { return sameEvidence(e, last) }) {
		t.Fatalf("pdktest.RequireCompleteEvidence: the reconcile is not the same over the same answers (%s); "+
			"a plugin's verdict and evidence must depend only on its input and what it reads", again.differs(base))
	}
	failures, changes := 0, 0
	for _, a := range rec.order {
		for _, p := range perturbations(a.body) {
			changes++
			run := evidenceRun(t, rec.replaying(t, opts, a, p.body), cr)
			if !slices.ContainsFunc(run.evidence, func(e [][]byte) bool { return sameEvidence(e, last) }) {
				continue // the memo misses: the change is covered
			}
			if run.same(base) {
				continue // the change does not matter to the verdict
			}
			if failures++; failures <= 10 {
				t.Errorf("pdktest: the memo's evidence does not cover %s of the answer to %s: with it %s, the plugin's "+
					"verdict changes (%s) but its evidence does not, so the memo would report the old result",
					p.where, a.request, p.what, run.differs(base))
			}
		}
	}
	if failures > 10 {
		t.Errorf("pdktest: %d more fields the memo's evidence does not cover", failures-10)
	}
	t.Logf("pdktest: the memo's evidence covered %d changes to %d answers (%d uncovered)", changes, len(rec.order), failures)
}

// evidenceOutcome is what one reconcile did.
type evidenceOutcome struct {
	result   []byte
	err      error
	writes   []string
	evidence [][][]byte
}

func (o evidenceOutcome) same(b evidenceOutcome) bool {
	return bytes.Equal(o.result, b.result) && fmt.Sprint(o.err) == fmt.Sprint(b.err) && slices.Equal(o.writes, b.writes)
}

func (o evidenceOutcome) differs(b evidenceOutcome) string {
	switch {
	case !slices.Equal(o.writes, b.writes):
		return "it writes " + strings.Join(o.writes, ", ")
	case fmt.Sprint(o.err) != fmt.Sprint(b.err):
		return fmt.Sprintf("error %v instead of %v", o.err, b.err)
	}
	return fmt.Sprintf("result %s instead of %s", o.result, b.result)
}

func sameEvidence(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

// evidenceRun reconciles a fresh copy of cr on a host made of opts.
func evidenceRun(t testing.TB, opts Options, cr CR) evidenceOutcome {
	t.Helper()
	opts.Cache = nil
	ctx := New(t, opts)
	h := Of(t, ctx)
	c := cr
	c.Status = cloneStatus(cr.Status)
	res, err := c.Reconcile(ctx)
	var out evidenceOutcome
	out.err = err
	if err == nil {
		if res == nil {
			res = &pdk.Result{}
		}
		out.result, _, _ = testhook.EncodeResult(res)
	}
	out.writes, _ = h.WriteLines()
	for _, s := range h.SourceCalls() {
		if s.Method != "GET" && s.Method != "HEAD" {
			out.writes = append(out.writes, "source "+s.Source+" "+s.String())
		}
	}
	out.evidence = h.Evidence()
	return out
}

// recorded is one answer the first reconcile read.
type recorded struct {
	request string
	status  int
	header  map[string][]string
	body    []byte
}

// answers keeps the first reconcile's answers by request, in order.
type answers struct {
	byKey map[string][]*recorded
	order []*recorded
}

func requestKey(service, method, path string, query url.Values) string {
	k := method + " " + service + " " + path
	if len(query) > 0 {
		k += "?" + query.Encode()
	}
	return k
}

func (a *answers) keep(key string, status int, header map[string][]string, body []byte) {
	r := &recorded{request: key, status: status, header: header, body: slices.Clone(body)}
	a.byKey[key] = append(a.byKey[key], r)
	if json.Valid(body) && len(bytes.TrimSpace(body)) > 0 {
		a.order = append(a.order, r)
	}
}

// recording answers from opts as New would and keeps every answer of a read.
func (a *answers) recording(t testing.TB, opts Options) Options {
	innerHost := Of(t, New(t, opts))
	out := opts
	out.Script = nil
	out.Cloud = nil
	out.Handler = func(req *pdk.Request) (*pdk.Response, error) {
		resp, err := innerHost.OpenStack(req)
		if err == nil && resp != nil && (req.Method == "GET" || req.Method == "HEAD") {
			a.keep(requestKey(req.Service, req.Method, req.Path, req.Query), resp.StatusCode, resp.Header, resp.Body)
		}
		return resp, err
	}
	out.Sources = slices.Clone(opts.Sources)
	for i := range out.Sources {
		server := out.Sources[i].Server
		name := out.Sources[i].Name
		out.Sources[i].Server = func(c SourceCall) (int, any) {
			status, body := server(c)
			if c.Method == "GET" || c.Method == "HEAD" {
				if b, err := bodyBytes(body); err == nil {
					a.keep(requestKey("source "+name, c.Method, c.Path, c.Query), status, nil, b)
					return status, json.RawMessage(b)
				}
			}
			return status, body
		}
	}
	return out
}

// replaying answers every read with what the first reconcile got, in order, and the one answer
// changed with body; a request the first reconcile did not make (a write, a read it did not
// need) is answered 599, which no verdict the memo could stand for rests on.
func (a *answers) replaying(t testing.TB, opts Options, changed *recorded, body []byte) Options {
	next := map[string]int{}
	answer := func(key string) *recorded {
		list := a.byKey[key]
		i := next[key]
		if i >= len(list) {
			return &recorded{status: 599, body: []byte(`{"error":"pdktest: the first reconcile made no such request"}`)}
		}
		next[key]++
		if list[i] == changed {
			c := *changed
			c.body = body
			return &c
		}
		return list[i]
	}
	out := opts
	out.Script, out.Cloud = nil, nil
	out.Handler = func(req *pdk.Request) (*pdk.Response, error) {
		r := answer(requestKey(req.Service, req.Method, req.Path, req.Query))
		resp := &pdk.Response{StatusCode: r.status, Header: r.header, Body: slices.Clone(r.body)}
		if resp.Header == nil {
			resp.Header = map[string][]string{"Content-Type": {"application/json"}}
		}
		return resp, nil
	}
	out.Sources = slices.Clone(opts.Sources)
	for i := range out.Sources {
		name := out.Sources[i].Name
		out.Sources[i].Server = func(c SourceCall) (int, any) {
			r := answer(requestKey("source "+name, c.Method, c.Path, c.Query))
			return r.status, json.RawMessage(r.body)
		}
	}
	return out
}

// perturbation is one answer with one field changed.
type perturbation struct {
	where, what string
	body        []byte
}

// perturbations changes each field of a JSON answer once: a string, a number or a boolean to
// another value, null to a string, an object's member removed, a list's first element dropped.
func perturbations(body []byte) []perturbation {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var root any
	if d.Decode(&root) != nil {
		return nil
	}
	var out []perturbation
	var walk func(path string, v any, set func(any))
	emit := func(path, what string) {
		b, err := json.Marshal(root)
		if err == nil {
			out = append(out, perturbation{where: "$" + path, what: what, body: b})
		}
	}
	walk = func(path string, v any, set func(any)) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				child := x[k]
				p := path + "." + k
				walk(p, child, func(nv any) { x[k] = nv })
				delete(x, k)
				emit(p, "the member removed")
				x[k] = child
			}
		case []any:
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e, func(nv any) { x[i] = nv })
			}
			if len(x) > 0 {
				set(x[1:])
				emit(path+"[0]", "the first element dropped")
				set(x)
			}
		case string:
			set(x + "~")
			emit(path, fmt.Sprintf("%q changed to %q", x, x+"~"))
			set(x)
		case json.Number:
			n := json.Number(strconv.FormatFloat(mustFloat(x)+1, 'f', -1, 64))
			set(n)
			emit(path, fmt.Sprintf("%s changed to %s", x, n))
			set(x)
		case bool:
			set(!x)
			emit(path, fmt.Sprintf("%t changed to %t", x, !x))
			set(x)
		case nil:
			set("~")
			emit(path, `null changed to "~"`)
			set(nil)
		}
	}
	walk("", root, func(nv any) { root = nv })
	return out
}

func mustFloat(n json.Number) float64 {
	f, _ := n.Float64()
	return f
}
