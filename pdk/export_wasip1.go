//go:build wasip1

package pdk

import (
	"encoding/json"
	"runtime"
	"unsafe"

	extism "github.com/extism/go-pdk"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// extismHost is the host of a real plugin: the openstack-sync host behind the Extism ABI.
type extismHost struct{}

//go:wasmimport extism:host/user openstack_request
func openstackRequest(offset uint64) uint64

//go:wasmimport extism:host/user source_request
func sourceRequest(offset uint64) uint64

// The host's bulk copies (docs/abi.md, "Bulk copies"): Extism's own functions move 8 bytes per
// host call, which cost a converged CR more than its reconcile.

//go:wasmimport extism:host/user input_read
func inputRead(offset uint64, dst unsafe.Pointer, n uint32) uint32

//go:wasmimport extism:host/user block_read
func blockRead(offset uint64, dst unsafe.Pointer, n uint32) uint32

//go:wasmimport extism:host/user block_write
func blockWrite(src unsafe.Pointer, n uint32) uint64

//go:wasmimport extism:host/user unchanged
func unchangedCall(parts unsafe.Pointer, n uint32) uint32

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env length
func blockLength(offset uint64) uint64

//go:wasmimport extism:host/env free
func blockFree(offset uint64)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

// readInput returns the call's input in one copy.
func readInput() []byte {
	n := inputLength()
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	b = b[:inputRead(0, unsafe.Pointer(&b[0]), uint32(n))]
	return b
}

// writeBlock copies b into a new kernel block and returns its offset (0 when it does not fit).
func writeBlock(b []byte) uint64 {
	if len(b) == 0 {
		return blockWrite(nil, 0)
	}
	off := blockWrite(unsafe.Pointer(&b[0]), uint32(len(b)))
	runtime.KeepAlive(b)
	return off
}

// takeBlock returns the bytes of the kernel block at off in one copy and frees the block.
func takeBlock(off uint64) []byte {
	n := blockLength(off)
	b := make([]byte, n)
	if n > 0 {
		b = b[:blockRead(off, unsafe.Pointer(&b[0]), uint32(n))]
	}
	blockFree(off)
	return b
}

// Unchanged passes the evidence to the host as (pointer, length) pairs, without copying it.
func (extismHost) Unchanged(evidence [][]byte) bool {
	parts := make([]uint32, 0, 2*len(evidence))
	for _, e := range evidence {
		if len(e) == 0 {
			parts = append(parts, 0, 0)
			continue
		}
		parts = append(parts, uint32(uintptr(unsafe.Pointer(&e[0]))), uint32(len(e)))
	}
	var p unsafe.Pointer
	if len(parts) > 0 {
		p = unsafe.Pointer(&parts[0])
	}
	hit := unchangedCall(p, uint32(len(evidence))) == 1
	runtime.KeepAlive(evidence)
	runtime.KeepAlive(parts)
	return hit
}

func (extismHost) Config(key string) (string, bool) { return extism.GetConfig(key) }

func (extismHost) Log(level LogLevel, msg string) {
	l := extism.LogInfo
	switch level {
	case LevelDebug:
		l = extism.LogDebug
	case LevelWarn:
		l = extism.LogWarn
	case LevelError:
		l = extism.LogError
	}
	extism.Log(l, msg)
}

func (extismHost) OpenStack(req *Request) (*Response, error) {
	// A call that lists thousands of items reads hundreds of pages: it yields before each request
	// too (see run), or the collector cannot finish a cycle while it decodes them all (20,000
	// router flavors and profiles ran out of 32 MiB while being listed in one call).
	runtime.Gosched()
	in, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	blk := writeBlock(in)
	if blk == 0 {
		return nil, &HostError{Kind: abi.KindTooLarge, Message: "the request does not fit the plugin's kernel memory limit"}
	}
	off := openstackRequest(blk)
	blockFree(blk)
	return decodeResponse(takeBlock(off))
}

// Source sends a request to a source outside OpenStack through the host (docs/abi.md section 8).
func (extismHost) Source(req *SourceRequest) (*Response, error) {
	in, err := encodeSourceRequest(req)
	if err != nil {
		return nil, err
	}
	blk := writeBlock(in)
	if blk == 0 {
		return nil, &HostError{Kind: abi.KindTooLarge, Message: "the request does not fit the plugin's kernel memory limit"}
	}
	off := sourceRequest(blk)
	blockFree(blk)
	return decodeResponse(takeBlock(off))
}

// guest is this wasm instance's state; the host runs one call at a time on an instance.
var guest instance

func run(entry string) int32 {
	// Let the runtime's own goroutines run once per call: in the sandbox they share the one thread
	// with the call, which never blocks, so without this the sweeper stays runnable and the
	// collector's workers idle for the instance's whole life (a crashed guest's stack shows them
	// so after thousands of calls), and a cycle ends only through the allocating call's assists.
	// 20,000 router flavors created in one pass ran out of 32 MiB after about 12,000 with 9 MiB
	// live; a Go guest outside the host, looping over the same calls, kept 5 MiB in use with this
	// yield and reached 100 MiB without it (host/internal/wasm:
	// TestGoGuestRunsItsOtherGoroutinesBetweenCalls).
	runtime.Gosched()
	var input []byte
	if entry != abi.EntryMetadata {
		input = readInput()
	}
	out, werr := guest.dispatch(entry, input, extismHost{})
	if werr != nil {
		b, _ := json.Marshal(werr)
		extism.SetErrorString(string(b))
		return 1
	}
	if out != nil {
		off := writeBlock(out)
		if off == 0 {
			extism.SetErrorString(`{"message":"the output does not fit the plugin's kernel memory limit","permanent":true}`)
			return 1
		}
		outputSet(off, uint64(len(out)))
	}
	return 0
}

// The ABI major version is the name of an export, so the host can refuse an incompatible plugin
// by inspecting the module, before running any of its code.
//
//go:wasmexport openstack_sync_abi_v1
func exportABIMarker() {}

//go:wasmexport metadata
func exportMetadata() int32 { return run(abi.EntryMetadata) }

//go:wasmexport wait_for_api
func exportWaitForAPI() int32 { return run(abi.EntryWaitForAPI) }

//go:wasmexport group_begin
func exportGroupBegin() int32 { return run(abi.EntryGroupBegin) }

//go:wasmexport group_end
func exportGroupEnd() int32 { return run(abi.EntryGroupEnd) }

//go:wasmexport reconcile
func exportReconcile() int32 { return run(abi.EntryReconcile) }

//go:wasmexport prune
func exportPrune() int32 { return run(abi.EntryPrune) }

//go:wasmexport delete
func exportDelete() int32 { return run(abi.EntryDelete) }

//go:wasmexport remark
func exportRemark() int32 { return run(abi.EntryRemark) }
