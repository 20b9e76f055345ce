// Package admission decides whether the bytes of a plugin module may be compiled, before any of
// them reach wazero: the module file read and hashed once (the bytes the pin is checked against
// are the bytes compiled), its size capped, every section walked the way the decoder will read it
// with every count and size checked against the bytes that remain and against a per-kind cap,
// every function body's control flow and calls walked against the compile budget, and the module
// rewritten into the shape the host compiles (tables capped, data segments merged or lifted out).
// It also holds the compile deadline that bounds what the walk cannot. The bounds, what each one
// costs the host and how they were measured are in docs/reliability.md, "Bounded load" and
// "Bounded compile"; the tests that pin them (the load-memory bound in a child process under an
// address-space limit, every section kind at and past its cap, FuzzLimitStructure) live here.
//
// Trust: none in the module. Every byte is hostile until walked: what cannot be read is refused
// rather than left to the decoder, which would allocate first and fail after, and a refusal is a
// *LoadError naming the file and the reason. The package links no wasm runtime
// (host/internal/layering), so the runtime (host/internal/wasm) compiles only what it returns.
package admission

import "fmt"

// The documented bound on the host's own memory while it admits, decodes and compiles a module
// (docs/reliability.md, "Bounded load"): the peak RSS of a process that loads one module stays
// within that of a process that loads the smallest module, plus LoadBytesPerModuleByte for each
// byte of the module, plus LoadFixedBudget (TestLoadMemoryStaysWithinTheBound, FuzzLimitStructure;
// the chart's memory.loadMiB is sized from it).
const (
	LoadBytesPerModuleByte = 16
	LoadFixedBudget        = 64 << 20
)

// LoadError is a module the host refuses to load.
type LoadError struct {
	Path   string
	Reason string
	Err    error
	// Problems lists each problem when the refusal found more than one (Reason joins them).
	Problems []string
}

func (e *LoadError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("wasm plugin %s: %s: %v", e.Path, e.Reason, e.Err)
	}
	return fmt.Sprintf("wasm plugin %s: %s", e.Path, e.Reason)
}

func (e *LoadError) Unwrap() error { return e.Err }

// A module that cannot load will not load on retry either.
func (e *LoadError) Permanent() bool { return true }
