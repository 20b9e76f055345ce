// Package supervise runs a hook pass in a child process and stops it from outside when a plugin
// call overruns its deadline, so that guest code can run without wazero's termination checks
// (docs/benchmarks.md, "Stopping a runaway guest").
//
// Go cannot preempt a goroutine running wazero's compiled code: a guest that spins without
// calling the host holds its thread, and the first stop-the-world (a GC) then waits for it, so no
// watchdog inside the hook process can act. The parent (Run) is a thin process that never runs
// guest code: it re-executes its own binary with the same arguments and an extra pipe on which
// the child's Reporter announces each stretch of guest code with its deadline and its end. When
// one is still open past its deadline plus a grace, the parent kills the child and hands over
// (Config.Overrun), which runs the pass again in-process with the checks on, resuming it: the
// child also reports each step of the pass it finished (Reporter.Done), and the parent hands
// those and the run's start to Overrun (Progress), so nothing finished is done twice and the
// run's budget keeps counting. Signals to the
// parent are forwarded to the child, and the child's exit code is the parent's.
package supervise
