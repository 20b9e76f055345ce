// Package kernel implements the Extism host ABI ("extism:host/env") natively on wazero: the
// memory blocks, input, output, error, config, vars and logging functions a guest built with an
// Extism PDK imports. Extism ships this as a wasm "kernel" module; here it is Go over a per-
// instance arena, so no Extism SDK or embedded blob is needed and every offset is bounds-checked.
//
// A State belongs to one guest instance and is found through the call's context, so one host
// module serves every instance of a runtime.
package kernel

import (
	"context"
	"encoding/binary"
	"fmt"
)

// ModuleName is the import module of the Extism kernel functions.
const ModuleName = "extism:host/env"

// Log levels as the Extism ABI numbers them (get_log_level and the log_* functions).
const (
	LevelTrace int32 = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
	LevelOff
)

// Fault is a guest misuse of the kernel ABI (an offset out of bounds, a limit exceeded). A kernel
// function panics with a *Fault; wazero turns that into the guest call's error, and errors.As finds
// it there.
type Fault struct {
	// Module is the import module of Func; empty means ModuleName.
	Module string
	Func   string
	Msg    string
}

func (f *Fault) Error() string {
	mod := f.Module
	if mod == "" {
		mod = ModuleName
	}
	return mod + " " + f.Func + ": " + f.Msg
}

func fault(fn, format string, args ...any) {
	panic(&Fault{Func: fn, Msg: fmt.Sprintf(format, args...)})
}

// Limits bound what a guest can make the host hold.
type Limits struct {
	// Memory caps the arena holding every block allocated during one call.
	Memory int
	// Output caps the bytes a guest may pass to output_set or error_set.
	Output int
	// Vars caps the total bytes of var keys and values an instance keeps.
	Vars int
	// LogLine caps one guest log message (the rest is cut, and the cut is said); 0 means
	// DefaultLogLine.
	LogLine int
	// LogBytes caps the guest log bytes passed on during one call; later messages are counted,
	// not logged. 0 means DefaultLogBytes.
	LogBytes int
}

// Defaults for Limits' log fields: a guest's log lines are the host's log lines, so a guest must
// not be able to flood the operator's logs with one huge message or a loop.
const (
	DefaultLogLine  = 8 << 10
	DefaultLogBytes = 256 << 10
)

// Logger receives guest log messages at an Extism level.
type Logger func(ctx context.Context, level int32, msg string)

// State is the kernel state of one guest instance.
type State struct {
	limits Limits
	// arena holds every block; offset 0 is never handed out so it can mean "none".
	arena  []byte
	blocks map[uint64]uint64
	// order lists block offsets in allocation order, so freeing the newest blocks gives their
	// space back: a plugin making many requests in one call frees each request and response and
	// its arena stays flat instead of growing to the limit.
	order []uint64

	input []byte

	output    []byte
	outputSet bool
	errMsg    []byte
	errSet    bool

	config   func(key string) (string, bool)
	vars     map[string][]byte
	varBytes int

	log      Logger
	logLevel int32
	// logBytes is what this call has logged; logDropped counts the messages it could not.
	logBytes, logDropped int
}

// arenaBase is where the first block starts: a non-zero, 8-aligned offset.
const arenaBase = 8

// blockOverhead is what each block is charged against Limits.Memory besides its bytes: the host's
// bookkeeping (an order entry and a map entry) is real memory too, and without the charge a guest
// allocating empty blocks in a loop grows it without bound while the arena stays empty.
const blockOverhead = 32

// keptBlocks is how many blocks' bookkeeping Reset keeps allocated for the next call; a call that
// made more has its map and order list dropped, so it does not pin them for the instance's life.
const keptBlocks = 4096

// NewState returns the state of a fresh instance; config answers config_get (nil: no config).
func NewState(limits Limits, config func(key string) (string, bool), log Logger, logLevel int32) *State {
	if limits.LogLine <= 0 {
		limits.LogLine = DefaultLogLine
	}
	if limits.LogBytes <= 0 {
		limits.LogBytes = DefaultLogBytes
	}
	return &State{
		limits:   limits,
		arena:    make([]byte, arenaBase, 64<<10),
		blocks:   map[uint64]uint64{},
		config:   config,
		vars:     map[string][]byte{},
		log:      log,
		logLevel: logLevel,
	}
}

// Reset starts a new call with input: the arena, output and error are emptied (as Extism does
// between calls), vars are kept. A large arena from an earlier call is dropped so one big call
// does not pin its memory for the instance's life.
func (s *State) Reset(input []byte) {
	if cap(s.arena) > 4<<20 {
		s.arena = make([]byte, arenaBase, 64<<10)
	}
	s.arena = s.arena[:arenaBase]
	if cap(s.order) > keptBlocks {
		s.blocks, s.order = map[uint64]uint64{}, nil
	}
	clear(s.blocks)
	s.order = s.order[:0]
	s.input = input
	s.output, s.outputSet = nil, false
	s.errMsg, s.errSet = nil, false
	s.logBytes, s.logDropped = 0, 0
}

// LogDropped returns how many guest log messages this call dropped over Limits.LogBytes.
func (s *State) LogDropped() int { return s.logDropped }

// logMessage passes one guest message on within the call's log budget.
func (s *State) logMessage(ctx context.Context, level int32, msg []byte) {
	if level < s.logLevel || s.log == nil {
		return
	}
	if s.logBytes >= s.limits.LogBytes {
		s.logDropped++
		return
	}
	text := string(msg)
	if len(msg) > s.limits.LogLine {
		text = fmt.Sprintf("%s… (%d more bytes cut)", msg[:s.limits.LogLine], len(msg)-s.limits.LogLine)
	}
	s.logBytes += min(len(msg), s.limits.LogLine)
	s.log(ctx, level, text)
}

// Output returns the bytes the guest passed to output_set and whether it called it.
func (s *State) Output() ([]byte, bool) { return s.output, s.outputSet }

// Error returns the bytes the guest passed to error_set and whether it called it.
func (s *State) Error() ([]byte, bool) { return s.errMsg, s.errSet }

// Alloc allocates a block of n bytes and returns its offset, or 0 when the arena limit would be
// exceeded. Each block also costs blockOverhead, so the limit bounds the host's bookkeeping too.
func (s *State) Alloc(n uint64) uint64 {
	used := uint64(len(s.arena)) + uint64(len(s.order)+1)*blockOverhead
	if n > uint64(s.limits.Memory) || used+n+7 > uint64(s.limits.Memory) {
		return 0
	}
	off := uint64(len(s.arena))
	end := off + n
	// Keep every block 8-aligned, as go-pdk reads and writes in 8-byte words.
	padded := (end + 7) &^ 7
	if padded > uint64(cap(s.arena)) {
		// Doubling amortises growth; capping at the limit keeps the host's arena within it.
		grown := make([]byte, padded, min(max(2*uint64(cap(s.arena)), padded), uint64(s.limits.Memory)))
		copy(grown, s.arena)
		s.arena = grown
	} else {
		s.arena = s.arena[:padded]
		clear(s.arena[off:padded])
	}
	s.blocks[off] = n
	s.order = append(s.order, off)
	return off
}

// WriteBlock allocates a block holding b and returns its offset, or 0 when it does not fit.
func (s *State) WriteBlock(b []byte) uint64 {
	off := s.Alloc(uint64(len(b)))
	if off != 0 {
		copy(s.arena[off:], b)
	}
	return off
}

// Block returns the bytes of the block starting at off (aliasing the arena).
func (s *State) Block(fn string, off uint64) []byte {
	n, ok := s.blocks[off]
	if !ok {
		fault(fn, "offset %d is not the start of an allocated block", off)
	}
	return s.arena[off : off+n]
}

func (s *State) span(fn string, off, n uint64) []byte {
	if off < arenaBase || off+n < off || off+n > uint64(len(s.arena)) {
		fault(fn, "offset %d (+%d bytes) is out of bounds of kernel memory [%d, %d)", off, n, arenaBase, len(s.arena))
	}
	return s.arena[off : off+n]
}

// Input returns the bytes of the call's input from off, at most n of them, for a host function
// that copies them to the guest in one piece (the Extism ABI reads them 8 bytes per call).
func (s *State) Input(fn string, off, n uint64) []byte {
	if off > uint64(len(s.input)) {
		fault(fn, "offset %d is past the end of the %d-byte input", off, len(s.input))
	}
	return s.input[off : off+min(n, uint64(len(s.input))-off)]
}

func (s *State) inputSpan(fn string, off, n uint64) []byte {
	if off+n < off || off+n > uint64(len(s.input)) {
		fault(fn, "offset %d (+%d bytes) is out of bounds of the %d-byte input", off, n, len(s.input))
	}
	return s.input[off : off+n]
}

// Free releases the block at off; trailing released blocks give their space back.
func (s *State) Free(off uint64) {
	delete(s.blocks, off)
	for len(s.order) > 0 {
		top := s.order[len(s.order)-1]
		if _, live := s.blocks[top]; live {
			break
		}
		s.arena = s.arena[:top]
		s.order = s.order[:len(s.order)-1]
	}
}

func (s *State) length(off uint64) uint64 { return s.blocks[off] }

func (s *State) loadU64(off uint64) uint64 {
	return binary.LittleEndian.Uint64(s.span("load_u64", off, 8))
}

func (s *State) storeU64(off, v uint64) {
	binary.LittleEndian.PutUint64(s.span("store_u64", off, 8), v)
}

func (s *State) setOutput(fn string, off, n uint64) []byte {
	if n > uint64(s.limits.Output) {
		fault(fn, "%d bytes exceed the output limit of %d bytes", n, s.limits.Output)
	}
	return append([]byte(nil), s.span(fn, off, n)...)
}

func (s *State) configGet(off uint64) uint64 {
	key := string(s.Block("config_get", off))
	if s.config == nil || key == "" {
		return 0
	}
	v, ok := s.config(key)
	if !ok {
		return 0
	}
	return s.mustWrite("config_get", []byte(v))
}

func (s *State) varGet(off uint64) uint64 {
	v, ok := s.vars[string(s.Block("var_get", off))]
	if !ok {
		return 0
	}
	return s.mustWrite("var_get", v)
}

func (s *State) varSet(keyOff, valOff uint64) {
	key := string(s.Block("var_set", keyOff))
	if old, ok := s.vars[key]; ok {
		s.varBytes -= len(key) + len(old)
		delete(s.vars, key)
	}
	if valOff == 0 {
		return
	}
	val := s.Block("var_set", valOff)
	if s.varBytes+len(key)+len(val) > s.limits.Vars {
		fault("var_set", "vars would hold %d bytes, over the limit of %d", s.varBytes+len(key)+len(val), s.limits.Vars)
	}
	s.vars[key] = append([]byte(nil), val...)
	s.varBytes += len(key) + len(val)
}

func (s *State) mustWrite(fn string, b []byte) uint64 {
	off := s.WriteBlock(b)
	if off == 0 {
		fault(fn, "kernel memory limit of %d bytes exceeded", s.limits.Memory)
	}
	return off
}

type stateKey struct{}

// WithState returns a context carrying s for the kernel functions of one guest call.
func WithState(ctx context.Context, s *State) context.Context {
	return context.WithValue(ctx, stateKey{}, s)
}

// FromContext returns the State of the call ctx belongs to; it faults when there is none, which
// only a host bug can cause.
func FromContext(ctx context.Context, fn string) *State {
	s, ok := ctx.Value(stateKey{}).(*State)
	if !ok {
		fault(fn, "called outside a guest call")
	}
	return s
}
