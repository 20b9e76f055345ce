package admission

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// Compile budget. The compiler's time and memory grow faster than linearly with some control
// flow: 300 KB of nested blocks compiled for over 4 minutes and a br_table of 256k targets took
// 30 s and 615 MiB, on every new pod and every --config. So each function body is walked before
// compiling and refused past these, and the compile as a whole has a deadline. The plugins of
// this repository peak at a 50 KB body, a nesting depth of 549 and a br_table of 1,144 targets;
// 8,192 nested blocks compile in ~5 s and 16,384 in ~30 s (docs/reliability.md, "Bounded compile").
// Calls cost the compiler far more memory than other instructions while it compiles their
// function (measured: ~0.9 KB a call and ~13 KB a call_indirect; a 1 MiB body of call_indirect
// ran a process past 1.5 GiB), and some of it stays with the compiled code, so they are counted
// per function and per module too; the plugins of this repository make at most 264 calls and 16
// indirect calls in one function, 23,109 and 521 in all.
const (
	// DefaultCompileTimeout bounds compiling one module (Options.CompileTimeout). A real plugin
	// compiles in 1-3 s on an idle core, but took over 2 minutes on a machine with a load of 25
	// per core; the per-function limits below bound the pathological cases, so the deadline is a
	// last resort that must not fire on a slow node.
	DefaultCompileTimeout = 10 * time.Minute
	// CompileTimeoutEnv sets Options.CompileTimeout.
	CompileTimeoutEnv = "OPENSTACK_SYNC_WASM_COMPILE_TIMEOUT"
	// maxFunctionBytes bounds one function body: the compiler's memory for one function grows with
	// it.
	maxFunctionBytes = 1 << 18
	// MaxNesting bounds how deep blocks, loops, ifs and trys nest in one function.
	MaxNesting = 1 << 12
	// maxBrTableTargets bounds one br_table; maxFunctionBrTargets all br_table targets of one
	// function.
	maxBrTableTargets    = 1 << 14
	maxFunctionBrTargets = 1 << 15
	// maxFunctionCalls bounds call and return_call in one function, maxModuleCalls in all;
	// maxFunctionIndirectCalls and maxModuleIndirectCalls the same for call_indirect and
	// return_call_indirect.
	maxFunctionCalls         = 1 << 13
	maxModuleCalls           = 1 << 18
	maxFunctionIndirectCalls = 1 << 10
	maxModuleIndirectCalls   = 1 << 14
)

// checkBody walks one function body's instructions (after its locals) and refuses control flow
// and calls past the compile budget. An opcode it does not know stops the walk: the compiler
// refuses it (or knows it and its immediates, which carry no control flow this walk would need).
func (s *structure) checkBody(i uint64, body []byte) error {
	if len(body) > maxFunctionBytes {
		return fmt.Errorf("function body %d has %d bytes; the host compiles at most %d", i, len(body), maxFunctionBytes)
	}
	r := &reader{b: body}
	depth, targets, calls, indirect := 0, uint64(0), 0, 0
	defer func() { s.calls, s.indirectCalls = s.calls+uint64(calls), s.indirectCalls+uint64(indirect) }()
	for !r.bad && len(r.b) > 0 {
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06 || op == 0x1f: // block loop if try try_table
			r.sleb() // block type
			if op == 0x1f {
				r.each("catch clauses", func(uint64) error {
					if k := r.byte(); k < 2 {
						r.leb() // tag
					}
					r.leb() // label
					return nil
				})
			}
			if depth++; depth > MaxNesting {
				return fmt.Errorf("function body %d nests blocks deeper than %d", i, MaxNesting)
			}
		case op == 0x0b: // end
			depth--
		case op == 0x0e: // br_table
			n, err := r.count("a br_table")
			if err != nil {
				return fmt.Errorf("function body %d: %v", i, err)
			}
			if n > maxBrTableTargets {
				return fmt.Errorf("function body %d has a br_table of %d targets; the host compiles at most %d", i, n, maxBrTableTargets)
			}
			if targets += n; targets > maxFunctionBrTargets {
				return fmt.Errorf("function body %d has more than %d br_table targets in all", i, maxFunctionBrTargets)
			}
			for j := uint64(0); j <= n && !r.bad; j++ {
				r.leb()
			}
		case op == 0x10 || op == 0x12: // call, return_call
			if calls++; calls > maxFunctionCalls {
				return fmt.Errorf("function body %d makes more than %d calls", i, maxFunctionCalls)
			}
			if s.calls+uint64(calls) > maxModuleCalls {
				return fmt.Errorf("function bodies make more than %d calls in all", maxModuleCalls)
			}
			r.leb()
		case op == 0x0c || op == 0x0d || op == 0x07 || op == 0x08 || op == 0x09 ||
			op == 0x18 || op >= 0x20 && op <= 0x26 || op == 0xd2 || op == 0x3f || op == 0x40 || op == 0xd5 || op == 0xd6:
			r.leb()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			if indirect++; indirect > maxFunctionIndirectCalls {
				return fmt.Errorf("function body %d makes more than %d indirect calls", i, maxFunctionIndirectCalls)
			}
			if s.indirectCalls+uint64(indirect) > maxModuleIndirectCalls {
				return fmt.Errorf("function bodies make more than %d indirect calls in all", maxModuleIndirectCalls)
			}
			r.leb()
			r.leb()
		case op == 0x1c: // select t*
			r.each("select types", func(uint64) error { r.valType(); return nil })
		case op >= 0x28 && op <= 0x3e:
			memarg(r)
		case op == 0x41 || op == 0x42 || op == 0xd0:
			r.sleb()
		case op == 0x43:
			r.skip(4)
		case op == 0x44:
			r.skip(8)
		case op == 0xfc:
			switch sub := r.leb(); {
			case sub == 8 || sub == 12 || sub == 14 || sub == 10:
				r.leb()
				r.leb()
			case sub == 9 || sub == 11 || sub == 13 || sub >= 15 && sub <= 17:
				r.leb()
			}
		case op == 0xfd:
			switch sub := r.leb(); {
			case sub <= 11 || sub == 92 || sub == 93:
				memarg(r)
			case sub == 12 || sub == 13:
				r.skip(16)
			case sub >= 21 && sub <= 34:
				r.byte()
			case sub >= 84 && sub <= 91:
				memarg(r)
				r.byte()
			}
		case op == 0xfe:
			if r.leb() == 3 {
				r.byte()
			} else {
				memarg(r)
			}
		case op <= 0x01 || op == 0x05 || op == 0x0a || op == 0x0f || op == 0x19 || op == 0x1a || op == 0x1b ||
			op >= 0x45 && op <= 0xc4 || op == 0xd1 || op == 0xd3 || op == 0xd4:
			// no immediates
		default:
			return nil
		}
	}
	return nil
}

// memarg skips a memory argument: alignment (bit 6 set: a memory index follows) and offset.
func memarg(r *reader) {
	if r.leb()&0x40 != 0 {
		r.leb()
	}
	r.leb()
}

// CompileWithin runs compile (the runtime compiling the module Limit shaped) and gives up at
// timeout with a *LoadError naming the module and the knob. The runtime stops between functions
// when ctx ends; one function already being compiled finishes in the background, bounded by
// checkBody, while the hook exits with the error, and abandoned runs once it has returned (the
// runtime cannot be closed under a running compile, so the caller must leave it to abandoned).
func CompileWithin[M any](parent context.Context, path string, timeout time.Duration, compile func(ctx context.Context) (M, error), abandoned func()) (M, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	type result struct {
		m   M
		err error
	}
	var none M
	done := make(chan result, 1)
	go func() {
		// The bytes may be a mapped file (modulecache.MapShaped): a fault on them fails the
		// compile, not the host.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				if _, fault := r.(interface{ Addr() uintptr }); !fault {
					panic(r)
				}
				done <- result{none, errors.New("the bytes changed while they were read")}
			}
		}()
		m, err := compile(ctx)
		done <- result{m, err}
	}()
	select {
	case res := <-done:
		if res.err != nil && ctx.Err() != nil {
			return none, compileStopped(parent, path, timeout)
		}
		return res.m, res.err
	case <-ctx.Done():
		go func() {
			<-done
			abandoned()
		}()
		return none, compileStopped(parent, path, timeout)
	}
}

// compileStopped names why a compile ended early: the caller's context (the hook stopping on
// SIGTERM, say), or the compile's own deadline.
func compileStopped(parent context.Context, path string, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return &LoadError{Path: path, Reason: "compiling was stopped", Err: err}
	}
	return compileTimeout(path, timeout)
}

func compileTimeout(path string, timeout time.Duration) error {
	return &LoadError{Path: path, Reason: fmt.Sprintf("compiling took longer than %s (raise %s if the module is "+
		"legitimately this large; pathological control flow is the usual cause)", timeout, CompileTimeoutEnv)}
}
