package main

import (
	"bytes"
	"slices"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

// The quick check: a converged router flavor decided from the JSON text of its spec and the
// group's view of Neutron, without decoding the spec or running the lifecycle driver.
//
// With the convergence memo off (or missing) every converged CR took the full path: its spec
// decoded strictly (profiles, meta_info as a map), checked, each profile's meta_info rendered as
// canonical JSON twice, the driver's find, reconcilers and status, with their closures and
// errors. In the sandbox every allocation feeds a collector run at GOGC 25 and every loop
// iteration pays a termination check (docs/benchmarks.md, "Guest time per CR"). The quick check
// reads the spec once, in place, and answers only "converged, nothing to write, nothing to note",
// with the status the full path reports then; anything it does not fully understand, and any
// difference, sends the CR down the full path, which decides and words every change, note and
// error as before (docs/plugins/neutron-router-flavors.md, "Converged without decoding").
//
// It is sound because it reads only what the full path would read without error and compares
// only texts that are their values: every string it accepts is printable ASCII without escapes
// (and, in meta_info, without the characters encoding/json escapes), every member name is one
// the strict decode knows, spelled as its tag spells it, none twice. Values are strings and
// booleans; a number, a nested value, null or an import leaves the CR to the full path.
// TestTheQuickCheckAgreesWithTheFullPath and FuzzQuickCheck hold it to the full path.

// Bounds past which the quick check leaves a CR to the full path; a site's flavors are far below.
const (
	quickMaxProfiles = 4
	quickMaxMeta     = 8
)

// quickSpec is a spec the quick check understood: strings as their text, which is their value.
type quickSpec struct {
	name, description []byte
	// serviceType is nil when the spec leaves it out (the default, L3_ROUTER_NAT).
	serviceType []byte
	enabled     bool
	profiles    [quickMaxProfiles]quickProfile
	nprofiles   int
}

// quickProfile is one entry of spec.service_profiles.
type quickProfile struct {
	driver, description []byte
	enabled             bool
	meta                qmembers
}

// qmembers are an object's members as key and value texts (a string with its quotes, true, false
// or null), in the text's order, each key once.
type qmembers struct {
	kv [quickMaxMeta + 4][2][]byte
	n  int
}

// add records a member; false for a key seen before or one too many.
func (ms *qmembers) add(key, value []byte, max int) bool {
	if ms.n == max {
		return false
	}
	for _, m := range ms.kv[:ms.n] {
		if bytes.Equal(m[0], key) {
			return false
		}
	}
	ms.kv[ms.n] = [2][]byte{key, value}
	ms.n++
	return true
}

// value is the text of member key, nil when there is none.
func (ms *qmembers) value(key string) []byte {
	for _, m := range ms.kv[:ms.n] {
		if string(m[0]) == key {
			return m[1]
		}
	}
	return nil
}

// read reads an object of canonical strings, booleans and null (null only when withNull).
func (ms *qmembers) read(s *qscan, max int, withNull bool) bool {
	return s.object(func(key []byte) bool {
		if !canonicalText(key) {
			return false
		}
		s.space()
		start := s.i
		var ok bool
		switch {
		case s.i < len(s.b) && s.b[s.i] == '"':
			_, ok = s.str(true)
		case withNull && bytes.HasPrefix(s.b[s.i:], []byte("null")):
			s.i += 4
			ok = true
		default:
			_, ok = s.boolean()
		}
		return ok && ms.add(key, s.b[start:s.i], max)
	})
}

// appendCanonical appends the members but the markers' (every profile's marker keys when
// skipMarkers) as canon.JSON writes them for the decoded map: keys sorted, compact.
func (ms *qmembers) appendCanonical(b []byte, skipMarkers bool) []byte {
	var order [len(qmembers{}.kv)]int
	n := 0
	for i := range ms.n {
		if skipMarkers && isMarkerKey(ms.kv[i][0]) {
			continue
		}
		j := n
		for ; j > 0 && bytes.Compare(ms.kv[order[j-1]][0], ms.kv[i][0]) > 0; j-- {
			order[j] = order[j-1]
		}
		order[j] = i
		n++
	}
	b = append(b, '{')
	for k, i := range order[:n] {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, ms.kv[i][0]...)
		b = append(b, '"', ':')
		b = append(b, ms.kv[i][1]...)
	}
	return append(b, '}')
}

func isMarkerKey(k []byte) bool {
	for _, mk := range allMarkerKeys {
		if string(k) == mk {
			return true
		}
	}
	return false
}

// quickMeta is metaOfText read from the metainfo text in place, when the text is an object of
// canonical strings, booleans and null (as this plugin and the original write it); false is no
// verdict. FuzzQuickMeta holds it to metaOfText.
func quickMeta(text string, own ownership) (profileMeta, bool) {
	var ms qmembers
	s := qscan{b: []byte(text)}
	if !ms.read(&s, len(ms.kv), true) {
		return profileMeta{}, false
	}
	if s.space(); s.i != len(s.b) {
		return profileMeta{}, false
	}
	// markedMeta and metaGroup on the texts: a marker's value is a string, so its text is
	// the value quoted.
	marked := func(m markerSet) bool {
		v := ms.value(m.owner)
		return len(v) == len(m.ownerValue)+2 && v[0] == '"' && string(v[1:len(v)-1]) == m.ownerValue
	}
	group := func(m markerSet) []byte {
		if m.group == "" {
			return nil
		}
		if v := ms.value(m.group); len(v) >= 2 && v[0] == '"' {
			return v[1 : len(v)-1]
		}
		return nil
	}
	g := group(own.Own)
	owned := marked(own.Own) && (len(g) == 0 || string(g) == own.Own.groupValue)
	otherGroup := !owned && marked(own.Own)
	foreign := !owned && !otherGroup && marked(own.Other)
	return profileMeta{user: string(ms.appendCanonical(nil, true)), owned: owned, foreign: foreign, otherGroup: otherGroup, parsed: true}, true
}

// parseQuickSpec reads a spec that the full path decodes and checks without error, or reports
// false. Member bits: a member seen twice is refused (the decode would keep the last).
func parseQuickSpec(b []byte, q *quickSpec) bool {
	s := qscan{b: b}
	var seen uint
	q.enabled = true
	ok := s.object(func(key []byte) bool {
		var bit uint
		ok := false
		switch string(key) {
		case "name":
			bit = 1
			q.name, ok = s.str(false)
		case "description":
			bit = 2
			q.description, ok = s.str(false)
		case "service_type":
			bit = 4
			q.serviceType, ok = s.str(false)
		case "is_enabled":
			bit = 8
			q.enabled, ok = s.boolean()
		case "service_profiles":
			bit = 16
			ok = s.profiles(q)
		case "managementPolicy":
			bit = 32
			var p []byte
			p, ok = s.str(false)
			ok = ok && string(p) == string(lifecycle.Managed)
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
	s.space()
	return ok && s.i == len(s.b) && q.valid()
}

func (s *qscan) profiles(q *quickSpec) bool {
	if !s.consume('[') {
		return false
	}
	if s.consume(']') {
		return true
	}
	for {
		if q.nprofiles == quickMaxProfiles || !s.profile(&q.profiles[q.nprofiles]) {
			return false
		}
		q.nprofiles++
		if !s.consume(',') {
			return s.consume(']')
		}
	}
}

func (s *qscan) profile(p *quickProfile) bool {
	var seen uint
	p.enabled = true
	return s.object(func(key []byte) bool {
		var bit uint
		ok := false
		switch string(key) {
		case "driver":
			bit = 1
			p.driver, ok = s.str(false)
		case "description":
			bit = 2
			p.description, ok = s.str(false)
		case "is_enabled":
			bit = 4
			p.enabled, ok = s.boolean()
		case "meta_info":
			bit = 8
			ok = p.meta.read(s, quickMaxMeta, false)
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
}

// valid is Spec.validate and validateLifecycle on the texts: a managed CR without an import.
func (q *quickSpec) valid() bool {
	if !validName(q.name) || len(q.name) > 255 || (q.serviceType != nil && string(q.serviceType) != l3Service) || q.nprofiles == 0 {
		return false
	}
	for i := range q.nprofiles {
		p := &q.profiles[i]
		if !validDriver(p.driver) {
			return false
		}
		for _, m := range p.meta.kv[:p.meta.n] {
			if isMarkerKey(m[0]) {
				return false
			}
			if v := m[1]; string(m[0]) == "vni_alloc" && string(v) != `"off"` && string(v) != `"on"` && string(v) != `"auto"` {
				return false
			}
		}
	}
	return true
}

// quickReconcile is the full path's result for a CR whose spec text the quick check reads and
// finds converged against the group's loaded view, with status.id id; nil is no verdict. It
// follows the full path step by step (lifecycle.Driver.Reconcile with this plugin's actuator)
// and stops wherever that path would write, note, log, read Neutron or fail.
func (st *state) quickReconcile(specText []byte, id string, q *quickSpec) *pdk.Result {
	if !st.loaded || !parseQuickSpec(specText, q) {
		return nil
	}
	ix := st.index()
	// find: the flavor of status.id in the view (else the full path reads it by GET), or the one
	// flavor the name adopts.
	var f flavor
	if id != "" {
		i, ok := ix.flavorAt[id]
		if !ok {
			return nil
		}
		f = st.flavors[i]
	} else {
		at := ix.named[string(q.name)]
		if len(at) != 1 {
			return nil
		}
		f = st.flavors[at[0]]
	}
	// profiles: each entry's first owned match not taken by an earlier entry, as it is.
	var want [quickMaxProfiles]string
	var key []byte
	for i := range q.nprofiles {
		p := &q.profiles[i]
		key = p.meta.appendCanonical(append(append(key[:0], p.driver...), 0), false)
		var owned *profile
		for _, at := range st.matchingKey(key) {
			pr := &st.profiles[at]
			if !slices.Contains(want[:i], pr.ID) && st.metaOf(*pr).owned {
				owned = pr
				break
			}
		}
		if owned == nil || owned.Enabled != p.enabled || owned.Description != string(p.description) {
			return nil
		}
		want[i] = owned.ID
	}
	// fields: the flavor's own fields already what the spec asks, marked as this group's.
	m := st.own.Own
	if f.ServiceType != l3Service || foreignFlavor(st.own, f) != nil || f.Enabled != q.enabled ||
		!m.ownsFlavor(f) || m.userDescription(f.Description) != string(q.description) {
		return nil
	}
	// bindings: the flavor as the view holds it binds exactly the wanted profiles (an unwanted
	// one is unbound or logged by the full path).
	cur := f
	if i, ok := ix.flavorAt[f.ID]; ok {
		cur = st.flavors[i]
	}
	for _, pid := range want[:q.nprofiles] {
		if !slices.Contains(cur.ServiceProfiles, pid) {
			return nil
		}
	}
	for _, pid := range cur.ServiceProfiles {
		if !slices.Contains(want[:q.nprofiles], pid) {
			return nil
		}
	}
	return lifecycle.Outcome{ID: f.ID, Resource: actuator{}.Observed(&cur), Available: lifecycle.ConditionTrue,
		Progress: lifecycle.Done()}.Result()
}

// qscan reads JSON text in place. It accepts only what the quick check can compare; anything
// else is a false, never an error.
type qscan struct {
	b []byte
	i int
}

func (s *qscan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

// consume reads c after any space; it reads nothing when c is not next.
func (s *qscan) consume(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, handing each member's key to member, which reads its value.
func (s *qscan) object(member func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		k, ok := s.str(false)
		if !ok || !s.consume(':') || !member(k) {
			return false
		}
		if !s.consume(',') {
			return s.consume('}')
		}
	}
}

// str reads a string whose text is its value (plainText, or canonicalText when canonical) and
// returns that text. Its end is found with bytes.IndexByte, the runtime's own loop: no
// backslash is accepted, so the first quote ends it.
func (s *qscan) str(canonical bool) ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	n := bytes.IndexByte(s.b[s.i:], '"')
	if n < 0 {
		return nil, false
	}
	t := s.b[s.i : s.i+n]
	s.i += n + 1
	if canonical {
		return t, canonicalText(t)
	}
	return t, plainText(t)
}

func (s *qscan) boolean() (bool, bool) {
	s.space()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true, true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false, true
	}
	return false, false
}

// plainText reports whether t, as a JSON string's content, is its own value: printable ASCII
// without a backslash.
func plainText(t []byte) bool {
	for _, c := range t {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}

// canonicalText is plainText without the characters encoding/json escapes (<, > and &): the
// string as canon.JSON writes it.
func canonicalText(t []byte) bool {
	for _, c := range t {
		if c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
