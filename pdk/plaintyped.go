package pdk

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// decodeJSON decodes b into v (a pointer) as json.Unmarshal does; with disallowUnknown, as a
// json.Decoder with DisallowUnknownFields does, and like json.Unmarshal refusing anything after
// the value (a Decoder alone would take `null0` as null). Plain JSON (see decodePlain)
// into plain Go types (structs with json tags, strings, bools, numbers, slices, string-keyed maps,
// pointers, empty interfaces, json.RawMessage) into a zero value is decoded here; everything else, and every
// error, is encoding/json's to decide. Specs and OpenStack answers are most of what a guest
// decodes, and encoding/json's per-byte scanner calls cost several of the host's termination
// checks per byte in wasm (docs/benchmarks.md, "Guest-side fixes"); a differential fuzz test
// holds the two decoders to the same answers.
func decodeJSON(b []byte, v any, disallowUnknown bool) error {
	if decodeTypedPlain(b, v, disallowUnknown) {
		return nil
	}
	slowDecodes.Add(1)
	if !disallowUnknown {
		return json.Unmarshal(b, v)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
		// json.Unmarshal's own words for it, with the offset of what follows the value.
		return json.Unmarshal(b, new(json.RawMessage))
	}
	return nil
}

// slowDecodes counts the values handed to encoding/json, for tests that hold a plugin's hot path
// to the PDK's own decoders (bench.SlowDecodes).
var slowDecodes atomic.Int64

// decodeTypedPlain reports whether it decoded b into v; when it did not, v is untouched.
func decodeTypedPlain(b []byte, v any, disallowUnknown bool) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return false
	}
	out := reflect.New(rv.Elem().Type()).Elem()
	d := typedDecoder{plainDecoder: plainDecoder{b: b}, strict: disallowUnknown}
	if !d.into(out, 0) {
		return false
	}
	d.space()
	if d.i != len(d.b) {
		return false
	}
	rv.Elem().Set(out)
	return true
}

type typedDecoder struct {
	plainDecoder
	strict bool
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	anyMapType          = reflect.TypeFor[map[string]any]()
	anySliceType        = reflect.TypeFor[[]any]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

var customDecodingCache sync.Map // reflect.Type -> bool

// customDecoding reports whether encoding/json would hand t to a method of its own.
func customDecoding(t reflect.Type) bool {
	if c, ok := customDecodingCache.Load(t); ok {
		return c.(bool)
	}
	p := reflect.PointerTo(t)
	custom := t.Implements(jsonUnmarshalerType) || p.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)
	customDecodingCache.Store(t, custom)
	return custom
}

// into decodes the next value into the settable zero value v.
func (d *typedDecoder) into(v reflect.Value, depth int) bool {
	if depth > maxPlainDepth {
		return false
	}
	t := v.Type()
	if t == rawMessageType {
		// Kept as text, as encoding/json keeps it: a copy, so a large answer the value came in
		// is not held by it. skip checks it is plain, as decoding it later would.
		d.space()
		start := d.i
		if !d.skip(depth) {
			return false
		}
		v.SetBytes(bytes.Clone(d.b[start:d.i]))
		return true
	}
	if customDecoding(t) {
		return false
	}
	d.space()
	if d.i >= len(d.b) {
		return false
	}
	if d.b[d.i] == 'n' {
		// null leaves every kind encoding/json accepts it for at its zero value.
		return d.literal("null")
	}
	switch t.Kind() {
	case reflect.String:
		if d.b[d.i] != '"' {
			return false
		}
		s, ok := d.str()
		v.SetString(s)
		return ok
	case reflect.Bool:
		switch {
		case d.literal("true"):
			v.SetBool(true)
		case d.literal("false"):
		default:
			return false
		}
		return true
	case reflect.Float64:
		f, ok := d.number()
		if ok {
			v.SetFloat(f.(float64))
		}
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		text, ok := d.integer()
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		text, ok := d.integer()
		if !ok {
			return false
		}
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
		return true
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return false
		}
		x, ok := d.value(depth)
		if ok && x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return ok
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !d.into(p.Elem(), depth+1) {
			return false
		}
		v.Set(p)
		return true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 || d.b[d.i] != '[' {
			return false // []byte is base64 to encoding/json
		}
		if t == anySliceType {
			// Built as an `any` is, without reflect per element (step lists, args).
			x, ok := d.array(depth)
			if ok {
				v.Set(reflect.ValueOf(x))
			}
			return ok
		}
		return d.slice(v, depth)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || customDecoding(t.Key()) || d.b[d.i] != '{' {
			return false
		}
		if t == anyMapType {
			// Built as an `any` is (extra, args): a map assignment per member, no reflect.
			x, ok := d.object(depth)
			if ok {
				v.Set(reflect.ValueOf(x))
			}
			return ok
		}
		return d.mapInto(v, depth)
	case reflect.Struct:
		if d.b[d.i] != '{' {
			return false
		}
		return d.structInto(v, depth)
	}
	return false
}

// integer returns the text of a JSON number that encoding/json would decode into an integer
// field: digits only, no fraction or exponent.
func (d *typedDecoder) integer() (string, bool) {
	start := d.i
	if _, ok := d.number(); !ok {
		return "", false
	}
	text := string(d.b[start:d.i])
	if strings.ContainsAny(text, ".eE") {
		return "", false
	}
	return text, true
}

func (d *typedDecoder) slice(v reflect.Value, depth int) bool {
	d.i++
	s := reflect.MakeSlice(v.Type(), 0, 0)
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		v.Set(s)
		return true
	}
	zero := reflect.Zero(v.Type().Elem())
	for {
		// Decoded in place: a new element per value would be an allocation each.
		s = reflect.Append(s, zero)
		if !d.into(s.Index(s.Len()-1), depth+1) {
			return false
		}
		d.space()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			v.Set(s)
			return true
		default:
			return false
		}
	}
}

// members walks the members of an object, calling fn with each key and the decoder positioned
// at its value; fn consumes the value. The key is a slice of the input when it has no escapes
// (no string is made for it: a struct's fields are found by comparing bytes) and only valid
// until fn returns.
func (d *typedDecoder) members(fn func(key []byte) bool) bool {
	d.i++
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return false
		}
		k, ok := d.key()
		if !ok {
			return false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return false
		}
		d.i++
		if !fn(k) {
			return false
		}
		d.space()
		if d.i >= len(d.b) {
			return false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// key decodes an object key as str does, returning a slice of the input when it can.
func (d *typedDecoder) key() ([]byte, bool) {
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return d.b[start:j], true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			s, ok := d.slowStr(start, j, true)
			return []byte(s), ok
		}
	}
	return nil, false
}

func (d *typedDecoder) mapInto(v reflect.Value, depth int) bool {
	m := reflect.MakeMap(v.Type())
	kt := v.Type().Key()
	// One scratch element, zeroed for each member: SetMapIndex copies it.
	e := reflect.New(v.Type().Elem()).Elem()
	ok := d.members(func(key []byte) bool {
		e.SetZero()
		if !d.into(e, depth+1) {
			return false
		}
		m.SetMapIndex(reflect.ValueOf(string(key)).Convert(kt), e)
		return true
	})
	if ok {
		v.Set(m)
	}
	return ok
}

func (d *typedDecoder) structInto(v reflect.Value, depth int) bool {
	fields, ok := structFields(v.Type())
	if !ok {
		return false
	}
	return d.members(func(key []byte) bool {
		f := fields.lookup(key)
		if f < 0 {
			if d.strict {
				return false
			}
			return d.skip(depth + 1)
		}
		path := fields.index[f]
		fv := v.Field(path[0])
		for _, i := range path[1:] {
			fv = fv.Field(i)
		}
		if !fv.IsZero() {
			// A repeated key: encoding/json decodes into what the first one left.
			return false
		}
		return d.into(fv, depth+1)
	})
}

// plainFields is a struct's fields as encoding/json names them, for the structs it treats
// plainly: embedded structs only without a name of their own, no ",string" option, ASCII names,
// no two fields of one name (ignoring case) at any depth.
type plainFields struct {
	names [][]byte
	index [][]int // the field's index path, through embedded structs
}

// lookup finds the field for key as encoding/json does: the exact name, else the first field
// whose name equals it under Unicode case folding (bytes.EqualFold, encoding/json's rule); -1
// when there is none.
func (p *plainFields) lookup(key []byte) int {
	for i, n := range p.names {
		if bytes.Equal(n, key) {
			return i
		}
	}
	for i, n := range p.names {
		if bytes.EqualFold(n, key) {
			return i
		}
	}
	return -1
}

var structFieldsCache sync.Map // reflect.Type -> *plainFields (nil: not plain)

func structFields(t reflect.Type) (*plainFields, bool) {
	if c, ok := structFieldsCache.Load(t); ok {
		p := c.(*plainFields)
		return p, p != nil
	}
	p := computeFields(t)
	structFieldsCache.Store(t, p)
	return p, p != nil
}

func computeFields(t reflect.Type) *plainFields {
	p := &plainFields{}
	if !p.add(t, nil, map[string]bool{}) {
		return nil
	}
	return p
}

// add records t's fields under the index path prefix, promoting the fields of embedded structs
// as encoding/json does; it answers false for what it leaves to encoding/json.
func (p *plainFields) add(t reflect.Type, prefix []int, seen map[string]bool) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.Anonymous && !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return false
		}
		for j := range len(name) {
			if name[j] >= 0x80 {
				return false // encoding/json's rules for these need Unicode folding
			}
		}
		if !validTagName(name) {
			name = ""
		}
		index := append(append([]int(nil), prefix...), i)
		if f.Anonymous {
			// An embedded struct without a name of its own has its fields promoted; pointers
			// (allocated, or refused when unexported) and every other embedding stay
			// encoding/json's.
			if name != "" || f.Type.Kind() != reflect.Struct || !p.add(f.Type, index, seen) {
				return false
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		for j := range len(name) {
			if name[j] >= 0x80 {
				return false
			}
		}
		folded := strings.ToLower(name)
		if seen[folded] {
			// Same name (encoding/json drops both, or a shallower one wins) or same but for
			// case (it picks one by rules not worth copying): leave the type to encoding/json.
			return false
		}
		seen[folded] = true
		p.names = append(p.names, []byte(name))
		p.index = append(p.index, index)
	}
	return true
}

// validTagName is encoding/json's rule for a usable tag name.
func validTagName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'):
			return false
		}
	}
	return true
}
