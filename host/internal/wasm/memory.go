package wasm

// Memory accounting (docs/reliability.md, "Memory per instance"): what the host process holds
// for its instances, so the pod's limit can be derived from the plugins' limits (the chart's
// memory values) and checked by TestGuestsAtTheirMemoryLimitKeepHostRSSWithinTheBound.
const (
	// instanceFixedBytes is an instance's own bookkeeping and the host-side copies of one call
	// (input, output, captured output) with the GC's slack on them: measured at most 24 MiB.
	instanceFixedBytes = 32 << 20
	// NativeStackBytes is the most wazero's call stack of one instance reaches: the stack grows
	// by doubling, a growth is refused past 50,000,000 bytes, so the last one allocates about
	// 100 MB while the 50 MB it copies from (and earlier stacks) wait for the GC. A module built
	// with the pdk (Go) keeps its goroutine stacks in its linear memory and never gets near it;
	// a module that recurses without end does (measured 158 MiB), and is excluded from
	// InstanceOverhead: the pod limit then ends the hook (SIGKILL, a failed run), never the node.
	NativeStackBytes = 200 << 20
)

// InstanceOverhead is what one instance costs the host besides its guest's linear memory, whose
// limit it holds at most once (the capacity is reserved up front, so growing never copies): the
// kernel's arena, which grows by doubling to KernelMemoryBytes while the arena it replaces waits
// for the GC, and instanceFixedBytes.
func InstanceOverhead(o Options) int64 {
	o = o.withDefaults()
	return int64(o.KernelMemoryBytes)*3/2 + instanceFixedBytes
}

// HostMemoryBound is the most the host holds while instances instances of o's memory limit run,
// on top of idle (the process with the plugin loaded).
func HostMemoryBound(idle int64, o Options, instances int) int64 {
	o = o.withDefaults()
	return idle + int64(instances)*(int64(o.MemoryLimitPages)*65536+InstanceOverhead(o))
}
