package main

import "bytes"

// The quick check: a converged runbook decided from the JSON of its spec and of Ironic's runbook,
// without decoding either.
//
// With the convergence memo off (or missing) every converged CR took the full path: its spec
// decoded strictly into Spec (steps, arguments and extra as maps), the steps checked, Ironic's
// runbook decoded likewise, then compared. In the sandbox every allocation feeds a collector run at
// GOGC 25 and every loop iteration pays a termination check, and that was most of a converged
// memo-off run's guest time (docs/benchmarks.md, "Guest time per CR"). The quick check reads each
// text once, in place, allocating nothing, and answers only "converged, nothing to write": anything
// it does not fully understand, and any difference, sends the CR down the full path, which decides
// and words every change, note and error as before.
//
// It is sound because the same JSON text always decodes to the same value: two values whose texts
// are byte for byte the same are equal, and so are two objects whose members are, pairwise, in
// any order (keys being printable ASCII without escapes or duplicates). It never concludes "equal"
// otherwise. A string compared with one of the plugin's own (a name, a marker) must be printable
// ASCII without escapes, so its text is its value. Every value it accepts also decodes without
// error in the full path (numbers without exponent of at most 15 digits, literals, valid strings).
// TestTheQuickCheckAgreesWithTheFullPath holds it to the full path.

// Bounds past which the quick check leaves a CR to the full path; a site's runbooks are far below.
const (
	quickMaxDepth   = 16
	quickMaxMembers = 32
	quickMaxSteps   = 16
	quickMaxTraits  = 64
	// quickMaxDigits keeps every accepted number exact as the float64 the full path decodes.
	quickMaxDigits = 15
)

// quickSpec is a spec the quick check understood: each member as text, strings without their
// quotes. A member the spec leaves out, or sets to null, is nil, as the full path's zero value.
type quickSpec struct {
	// name is printable ASCII without escapes: its text is the runbook's name.
	name, description, owner []byte
	public, disableRamdisk   bool
	// traits is a JSON array of plain strings (nil for none); extra a checked object.
	traits, extra []byte
	steps         [quickMaxSteps]quickStep
	nsteps        int
}

// quickStep is one step as text: interface and step without quotes, the order, and the args
// object (nil for none, which is {}).
type quickStep struct {
	iface, name []byte
	order       int64
	args        []byte
}

// parseQuickSpec reads a spec the full path would decode and check without error, or reports
// false. It refuses what the strict decode refuses (a member Spec does not declare) and what it
// cannot compare.
func parseQuickSpec(b []byte, q *quickSpec) bool {
	s := jscan{b: b}
	_, ok := s.object(func(key []byte) (bit uint, ok bool) {
		switch string(key) {
		case "runbookName":
			q.name, ok = s.plainString()
			return 1, ok
		case "description":
			q.description, ok = s.stringOrNull()
			return 2, ok
		case "owner":
			q.owner, ok = s.stringOrNull()
			return 4, ok
		case "public":
			q.public, ok = s.boolOrNull()
			return 8, ok
		case "disableRamdisk":
			q.disableRamdisk, ok = s.boolOrNull()
			return 16, ok
		case "traits":
			q.traits, ok = s.plainStringsOrNull()
			return 32, ok
		case "steps":
			q.nsteps, ok = s.steps(&q.steps, true)
			return 64, ok
		case "extra":
			q.extra, ok = s.objectOrNull(true)
			return 128, ok
		}
		// The strict decode refuses it, or matches it to a member in another case.
		return 0, false
	})
	s.space()
	// validate and desiredSteps: a name, not both public and owned, at least one step.
	return ok && s.i == len(s.b) && len(q.name) > 0 && !(q.public && len(q.owner) > 0) && q.nsteps > 0
}

// steps reads an array of steps into out: a spec's (desired: a map in which any member but the
// four is ignored, order a number or a numeric string; desiredSteps must accept it) or Ironic's
// (decoded into step: order an integer, other members skipped). null is no steps.
func (s *jscan) steps(out *[quickMaxSteps]quickStep, desired bool) (int, bool) {
	if s.isNull() {
		return 0, !desired
	}
	if !s.consume('[') {
		return 0, false
	}
	n := 0
	for first := true; ; first = false {
		more, ok := s.element(first)
		if !ok || (more && n == quickMaxSteps) {
			return 0, false
		}
		if !more {
			return n, true
		}
		if !s.step(&out[n], desired) {
			return 0, false
		}
		n++
	}
}

var stepFields = []string{"interface", "step", "order", "args"}

func (s *jscan) step(st *quickStep, desired bool) bool {
	seen, ok := s.object(func(key []byte) (bit uint, ok bool) {
		switch string(key) {
		case "interface":
			st.iface, ok = s.plainString()
			return 1, ok
		case "step":
			st.name, ok = s.plainString()
			return 2, ok
		case "order":
			st.order, ok = s.order(desired)
			return 4, ok
		case "args":
			st.args, ok = s.objectOrNull(desired)
			return 8, ok
		}
		// A map keeps any other member apart; a struct decode might take it for a field in
		// another case.
		return 0, (desired && s.value(0)) || (!desired && !foldsTo(key, stepFields) && s.skip())
	})
	if !ok {
		return false
	}
	if !desired {
		return len(st.iface) > 0 && len(st.name) > 0
	}
	// desiredSteps: interface, step and order set, step not empty, interface a known one.
	if seen&7 != 7 || len(st.name) == 0 {
		return false
	}
	for _, v := range validInterfaces {
		if string(st.iface) == v {
			return true
		}
	}
	return false
}

// quickRunbook is Ironic's runbook as the quick check reads it.
type quickRunbook struct {
	description, owner     []byte
	public, disableRamdisk bool
	extra, traits          []byte
	steps                  [quickMaxSteps]quickStep
	nsteps                 int
}

// runbookFields are the members the full path decodes from Ironic's runbook (runbook).
var runbookFields = []string{"uuid", "name", "steps", "disable_ramdisk", "public", "owner", "extra", "description", "traits"}

// parseQuickRunbook reads Ironic's runbook as the full path's lax decode would, or reports false.
func parseQuickRunbook(b []byte, r *quickRunbook) bool {
	s := jscan{b: b}
	_, ok := s.object(func(key []byte) (bit uint, ok bool) {
		switch string(key) {
		case "uuid":
			_, ok = s.anyStringOrNull()
			return 1, ok
		case "name":
			_, ok = s.anyStringOrNull()
			return 2, ok
		case "steps":
			r.nsteps, ok = s.steps(&r.steps, false)
			return 4, ok
		case "disable_ramdisk":
			r.disableRamdisk, ok = s.boolOrNull()
			return 8, ok
		case "public":
			r.public, ok = s.boolOrNull()
			return 16, ok
		case "owner":
			r.owner, ok = s.anyStringOrNull()
			return 32, ok
		case "extra":
			r.extra, ok = s.objectOrNull(false)
			return 64, ok
		case "description":
			r.description, ok = s.anyStringOrNull()
			return 128, ok
		case "traits":
			r.traits, ok = s.stringsOrNull()
			return 256, ok
		}
		return 0, !foldsTo(key, runbookFields) && s.skip()
	})
	s.space()
	return ok && s.i == len(s.b)
}

// quickConverged reports whether Ironic's runbook rb (its JSON) already is what spec q asks for,
// with nothing for the full path to write or to note but the version's (withTraits false: the
// version reports neither traits nor descriptions, which are then not compared). m is the group's
// marker. False is no verdict.
func quickConverged(q *quickSpec, rb []byte, m markerSet, withTraits bool) bool {
	var cur quickRunbook
	if !parseQuickRunbook(rb, &cur) || cur.disableRamdisk != q.disableRamdisk || cur.public != q.public ||
		(len(q.owner) > 0 && !bytes.Equal(cur.owner, q.owner)) ||
		// Neither public nor owned: the full path notes it.
		(!cur.public && len(cur.owner) == 0) {
		return false
	}
	if withTraits && (!bytes.Equal(cur.description, q.description) || !sameQuickTraits(q.traits, cur.traits) ||
		!sameQuickTraits(cur.traits, q.traits)) {
		return false
	}
	return sameQuickSteps(q.steps[:q.nsteps], cur.steps[:cur.nsteps]) && sameQuickExtra(q.extra, cur.extra, m)
}

// traitList is the spec's traits as strings.
func (q *quickSpec) traitList() []string {
	if q.traits == nil {
		return nil
	}
	var out []string
	s := jscan{b: q.traits}
	s.consume('[')
	for first := true; ; first = false {
		if more, _ := s.element(first); !more {
			return out
		}
		t, _ := s.plainString()
		out = append(out, string(t))
	}
}

// sameQuickTraits reports whether every trait of a is in b (arrays of strings, or nil).
func sameQuickTraits(a, b []byte) bool {
	if a == nil {
		return true
	}
	s := jscan{b: a}
	s.consume('[')
	for first := true; ; first = false {
		if more, _ := s.element(first); !more {
			return true
		}
		t, _ := s.anyString()
		if !quickStringIn(t, b) {
			return false
		}
	}
}

func quickStringIn(t, list []byte) bool {
	if list == nil {
		return false
	}
	s := jscan{b: list}
	s.consume('[')
	for first := true; ; first = false {
		if more, _ := s.element(first); !more {
			return false
		}
		if u, _ := s.anyString(); bytes.Equal(t, u) {
			return true
		}
	}
}

// sameQuickSteps is sameSteps on the texts: the same steps in any list order, arguments compared
// as JSON values (none is {}).
func sameQuickSteps(desired, current []quickStep) bool {
	if len(desired) != len(current) {
		return false
	}
	var used [quickMaxSteps]bool
	for i := range desired {
		d := &desired[i]
		found := false
		for j := range current {
			c := &current[j]
			if !used[j] && c.order == d.order && bytes.Equal(c.iface, d.iface) && bytes.Equal(c.name, d.name) &&
				sameText(argsText(d.args), argsText(c.args)) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func argsText(args []byte) []byte {
	if args == nil {
		return []byte("{}")
	}
	return args
}

// sameQuickExtra reports whether Ironic's extra is the spec's with the marker laid over it
// (desiredExtra), so that it also carries this group's marker (foreign has nothing to say).
func sameQuickExtra(spec, cur []byte, m markerSet) bool {
	if cur == nil || (m.group != "" && m.groupValue == "") {
		return false
	}
	marks := [...][2]string{{m.owner, m.ownerValue}, {m.version, m.versionValue}, {m.source, m.sourceValue}, {m.group, m.groupValue}}
	nmarks := len(marks)
	if m.group == "" {
		nmarks--
	}
	isMark := func(k []byte) int {
		for i := range nmarks {
			if string(k) == marks[i][0] {
				return i
			}
		}
		return -1
	}
	// The desired members: the marker's and the spec's others.
	want := nmarks
	if spec != nil {
		s := jscan{b: spec}
		s.consume('{')
		for first := true; ; first = false {
			k, more, _ := s.member(first)
			if !more {
				break
			}
			s.skip()
			if isMark(k) < 0 {
				want++
			}
		}
	}
	c := jscan{b: cur}
	c.consume('{')
	have := 0
	var keys [quickMaxMembers][]byte
	for first := true; ; first = false {
		k, more, ok := c.member(first)
		if !ok || (more && have == quickMaxMembers) {
			return false
		}
		if !more {
			break
		}
		// Ironic's extra is checked member by member: first that no key comes twice.
		for _, seen := range keys[:have] {
			if bytes.Equal(seen, k) {
				return false
			}
		}
		keys[have] = k
		c.space()
		start := c.i
		if !c.skip() {
			return false
		}
		v := c.b[start:c.i]
		have++
		if i := isMark(k); i >= 0 {
			if len(v) != len(marks[i][1])+2 || v[0] != '"' || string(v[1:len(v)-1]) != marks[i][1] || !printable(v[1:len(v)-1]) {
				return false
			}
			continue
		}
		w, ok := quickMember(spec, k)
		if !ok || !sameText(w, v) {
			return false
		}
	}
	return have == want
}

// quickMember is the value of member k of the checked object obj.
func quickMember(obj, k []byte) ([]byte, bool) {
	if obj == nil {
		return nil, false
	}
	s := jscan{b: obj}
	s.consume('{')
	for first := true; ; first = false {
		key, more, _ := s.member(first)
		if !more {
			return nil, false
		}
		s.space()
		start := s.i
		s.skip()
		if bytes.Equal(key, k) {
			return s.b[start:s.i], true
		}
	}
}

// sameText reports whether the spec's checked value a and Ironic's value b are the same value:
// the same text (b then is as checked as a), or, both checked, the same value (sameValue).
func sameText(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	x, y := jscan{b: a}, jscan{b: b}
	return x.value(0) && y.value(0) && sameValue(a, b)
}

// sameValue reports whether two checked values are the same: the same text, or objects whose
// members are, in any order, or arrays whose elements are.
func sameValue(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	x, y := jscan{b: a}, jscan{b: b}
	x.space()
	y.space()
	if x.i >= len(a) || y.i >= len(b) || a[x.i] != b[y.i] {
		return false
	}
	switch a[x.i] {
	case '[':
		x.i++
		y.i++
		for first := true; ; first = false {
			mx, _ := x.element(first)
			my, _ := y.element(first)
			if mx != my {
				return false
			}
			if !mx {
				return true
			}
			x.space()
			y.space()
			sx, sy := x.i, y.i
			x.skip()
			y.skip()
			if !sameValue(a[sx:x.i], b[sy:y.i]) {
				return false
			}
		}
	case '{':
		x.i++
		n := 0
		for first := true; ; first = false {
			k, more, _ := x.member(first)
			if !more {
				break
			}
			x.space()
			sx := x.i
			x.skip()
			w, ok := quickMember(b, k)
			if !ok || !sameValue(a[sx:x.i], w) {
				return false
			}
			n++
		}
		y.i++
		for first := true; ; first = false {
			_, more, _ := y.member(first)
			if !more {
				break
			}
			y.skip()
			n--
		}
		return n == 0
	}
	// Scalars: the same text or not the same (as far as the quick check can tell).
	return false
}

// foldsTo reports whether key names one of names in another case: a struct decode would take it
// for that field. Keys are printable ASCII (member), so ASCII case folds are all encoding/json's.
func foldsTo(key []byte, names []string) bool {
	for _, n := range names {
		if len(n) == len(key) && asciiEqualFold(key, n) {
			return true
		}
	}
	return false
}

// asciiEqualFold is strings.EqualFold for ASCII text of equal length, without the Unicode tables
// it would bring into the module.
func asciiEqualFold(a []byte, b string) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// printable reports whether s is printable ASCII: as the content of a JSON string without
// escapes, its text is its value.
func printable(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// jscan reads JSON text in place. The texts it is given are valid JSON (the host's input, and
// Ironic's answers as the PDK has read them); it checks what the full path's decode could still
// refuse or read differently. Its "checked" values (value) are any JSON value whose numbers have
// no exponent and at most quickMaxDigits digits, whose object keys are printable ASCII without
// escapes and without duplicates (at most quickMaxMembers an object), nested at most
// quickMaxDepth deep. Every method reports false for anything else; the caller then gives up.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) consume(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jscan) literal(lit string) bool {
	s.space()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// object reads an object, each member's value by read, which returns the member's bit (0 for one
// that may come more than once) and whether it could read it. It reports the bits seen, and false
// for a member read could not read or a bit seen twice (a key twice, which the decode would read
// as the last).
func (s *jscan) object(read func(key []byte) (bit uint, ok bool)) (seen uint, ok bool) {
	if !s.consume('{') {
		return 0, false
	}
	for first := true; ; first = false {
		key, more, ok := s.member(first)
		if !ok {
			return 0, false
		}
		if !more {
			return seen, true
		}
		bit, ok := read(key)
		if !ok || seen&bit != 0 {
			return 0, false
		}
		seen |= bit
	}
}

// member moves to the next member of an object whose '{' was read and returns its key (printable
// ASCII without escapes), the scanner after the ':'; more is false at the closing '}'.
func (s *jscan) member(first bool) (key []byte, more, ok bool) {
	if s.consume('}') {
		return nil, false, true
	}
	if !first && !s.consume(',') {
		return nil, false, false
	}
	key, ok = s.plainString()
	if !ok || !s.consume(':') {
		return nil, false, false
	}
	return key, true, true
}

// element moves to the next element of an array whose '[' was read; more is false at ']'.
func (s *jscan) element(first bool) (more, ok bool) {
	if s.consume(']') {
		return false, true
	}
	if !first && !s.consume(',') {
		return false, false
	}
	return true, true
}

// anyString reads a string and returns its text between the quotes, escapes as written.
func (s *jscan) anyString() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			return nil, false
		}
		end := s.i + j
		s.i = end + 1
		// Escaped when an odd number of backslashes precede it.
		n := 0
		for k := end - 1; k >= start && s.b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return s.b[start:end], true
		}
	}
}

// plainString reads a string of printable ASCII without escapes and returns its content.
func (s *jscan) plainString() ([]byte, bool) {
	t, ok := s.anyString()
	if !ok || !printable(t) || bytes.IndexByte(t, '\\') >= 0 {
		return nil, false
	}
	return t, true
}

func (s *jscan) isNull() bool { return s.literal("null") }

func (s *jscan) stringOrNull() ([]byte, bool) {
	if s.isNull() {
		return nil, true
	}
	return s.anyString()
}

func (s *jscan) anyStringOrNull() ([]byte, bool) { return s.stringOrNull() }

func (s *jscan) boolOrNull() (v, ok bool) {
	switch {
	case s.literal("true"):
		return true, true
	case s.literal("false"), s.isNull():
		return false, true
	}
	return false, false
}

// stringsOrNull reads null or an array of strings and returns its text (nil for null).
func (s *jscan) stringsOrNull() ([]byte, bool) { return s.stringList(false) }

// plainStringsOrNull is stringsOrNull for strings of printable ASCII without escapes.
func (s *jscan) plainStringsOrNull() ([]byte, bool) { return s.stringList(true) }

func (s *jscan) stringList(plain bool) ([]byte, bool) {
	if s.isNull() {
		return nil, true
	}
	s.space()
	start := s.i
	if !s.consume('[') {
		return nil, false
	}
	for first, n := true, 0; ; first, n = false, n+1 {
		more, ok := s.element(first)
		if !ok || n > quickMaxTraits {
			return nil, false
		}
		if !more {
			return s.b[start:s.i], true
		}
		if plain {
			_, ok = s.plainString()
		} else {
			_, ok = s.anyString()
		}
		if !ok {
			return nil, false
		}
	}
}

// objectOrNull reads null or an object, checked or (Ironic's, which is checked only where it
// differs from the spec's: sameText) not, and returns its text (nil for null).
func (s *jscan) objectOrNull(check bool) ([]byte, bool) {
	if s.isNull() {
		return nil, true
	}
	s.space()
	start := s.i
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, false
	}
	if ok := (check && s.value(0)) || (!check && s.skip()); !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// order reads a step's order: a whole number of at most quickMaxDigits digits, or (desired) a
// string of such digits, which the full path reads as the same number.
func (s *jscan) order(desired bool) (int64, bool) {
	s.space()
	quoted := desired && s.i < len(s.b) && s.b[s.i] == '"'
	if quoted {
		s.i++
	}
	start := s.i
	var n int64
	for ; s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9'; s.i++ {
		n = n*10 + int64(s.b[s.i]-'0')
	}
	digits := s.i - start
	if digits == 0 || digits > quickMaxDigits {
		return 0, false
	}
	if quoted {
		return n, s.i < len(s.b) && s.b[s.i] == '"' && s.consume('"')
	}
	// Not a fraction or an exponent, which are no whole number here.
	return n, s.i == len(s.b) || (s.b[s.i] != '.' && s.b[s.i] != 'e' && s.b[s.i] != 'E')
}

// value moves past a checked value.
func (s *jscan) value(depth int) bool {
	if depth > quickMaxDepth {
		return false
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, ok := s.anyString()
		return ok
	case '{':
		s.i++
		var keys [quickMaxMembers][]byte
		for n, first := 0, true; ; n, first = n+1, false {
			k, more, ok := s.member(first)
			if !ok || (more && n == quickMaxMembers) {
				return false
			}
			if !more {
				return true
			}
			for _, seen := range keys[:n] {
				if bytes.Equal(seen, k) {
					return false
				}
			}
			keys[n] = k
			if !s.value(depth + 1) {
				return false
			}
		}
	case '[':
		s.i++
		for first := true; ; first = false {
			more, ok := s.element(first)
			if !ok {
				return false
			}
			if !more {
				return true
			}
			if !s.value(depth + 1) {
				return false
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

// number moves past a number without exponent and of at most quickMaxDigits digits.
func (s *jscan) number() bool {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	digits := s.i - start
	if digits == 0 {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		frac := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		if s.i == frac {
			return false
		}
		digits += s.i - frac
	}
	return digits <= quickMaxDigits && (s.i == len(s.b) || (s.b[s.i] != 'e' && s.b[s.i] != 'E'))
}

// skip moves past any value of valid JSON text.
func (s *jscan) skip() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.anyString()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.anyString(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

// listedName reads a listed runbook's name and whether it reports traits (a traits member that is
// not null), as a decode of only those two members would, or reports false (the caller then
// decodes them): the group's list reads this of every runbook Ironic holds, and the decode's
// pass over the rest of each one, its strings a byte at a time, was a tenth of a converged pass.
func listedName(raw []byte) (name []byte, traits, ok bool) {
	s := jscan{b: raw}
	seen, ok := s.object(func(key []byte) (bit uint, ok bool) {
		switch string(key) {
		case "name":
			name, ok = s.plainString()
			return 1, ok
		case "traits":
			traits = !s.isNull()
			return 2, !traits || s.skip()
		}
		return 0, !foldsTo(key, listedFields) && s.skip()
	})
	s.space()
	if !ok || s.i != len(s.b) || seen&1 == 0 {
		return nil, false, false
	}
	return name, traits, true
}

var listedFields = []string{"name", "traits"}
