//go:build wasip1

package pdk

import (
	"encoding/json"

	extism "github.com/extism/go-pdk"
)

// extismHost is the host of a real plugin: the openstack-sync host behind the Extism ABI.
type extismHost struct{}

//go:wasmimport extism:host/user openstack_request
func openstackRequest(offset uint64) uint64

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
	in, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	mem := extism.AllocateBytes(in)
	off := openstackRequest(mem.Offset())
	mem.Free()
	out := extism.FindMemory(off)
	raw := out.ReadBytes()
	out.Free()
	return decodeResponse(raw)
}

// guest is this wasm instance's state; the host runs one call at a time on an instance.
var guest instance

func run(entry string) int32 {
	var input []byte
	if entry != entryMetadata {
		input = extism.Input()
	}
	out, werr := guest.dispatch(entry, input, extismHost{})
	if werr != nil {
		b, _ := json.Marshal(werr)
		extism.SetErrorString(string(b))
		return 1
	}
	if out != nil {
		extism.Output(out)
	}
	return 0
}

// The ABI major version is the name of an export, so the host can refuse an incompatible plugin
// by inspecting the module, before running any of its code.
//
//go:wasmexport openstack_sync_abi_v1
func exportABIMarker() {}

//go:wasmexport metadata
func exportMetadata() int32 { return run(entryMetadata) }

//go:wasmexport wait_for_api
func exportWaitForAPI() int32 { return run(entryWaitForAPI) }

//go:wasmexport group_begin
func exportGroupBegin() int32 { return run(entryGroupBegin) }

//go:wasmexport group_end
func exportGroupEnd() int32 { return run(entryGroupEnd) }

//go:wasmexport reconcile
func exportReconcile() int32 { return run(entryReconcile) }

//go:wasmexport prune
func exportPrune() int32 { return run(entryPrune) }

//go:wasmexport delete
func exportDelete() int32 { return run(entryDelete) }
