//go:build wasip1

// Command sourcemock is an adversarial guest of the source capability (docs/abi.md section 8): it
// speaks the ABI through go-pdk directly, so it can send any source_request a hostile plugin
// might (a URL of its own choosing, headers that would carry or redirect the credential, paths
// that climb out of the base URL, a Secret it was not given) and reports exactly what came back.
// It keeps every answer in memory, so a test can search the guest's memory for the credential.
package main

import (
	"encoding/json"

	extism "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user source_request
func sourceRequest(offset uint64) uint64

//go:wasmexport openstack_sync_abi_v1
func abi() {}

//go:wasmexport metadata
func metadata() int32 {
	extism.OutputString(`{"abi_version":1,"name":"sourcemock","noun":"source thing","env_prefix":"SRC",` +
		`"binding_name":"sources","grants":[],"skip_status":true,` +
		`"sources":[{"name":"nautobot","methods":["GET","POST"],"paths":["api/**"]}]}`)
	return 0
}

//go:wasmexport wait_for_api
func waitForAPI() int32 { return 0 }

// The group entry points make the host keep one instance for a group's calls, which the memory
// scan reads after them.

//go:wasmexport group_begin
func groupBegin() int32 { return 0 }

//go:wasmexport group_end
func groupEnd() int32 { return 0 }

// kept holds every answer the guest was given, for the memory scan.
var kept [][]byte

//go:wasmexport reconcile
func reconcile() int32 {
	var in struct {
		Spec struct {
			// Requests are sent as they are, one source_request each; Raw ones as text.
			Requests []json.RawMessage `json:"requests"`
			Raw      []string          `json:"raw"`
		} `json:"spec"`
	}
	if err := extism.InputJSON(&in); err != nil {
		extism.SetError(err)
		return 1
	}
	var notes []string
	send := func(req string) {
		mem := extism.AllocateString(req)
		out := extism.FindMemory(sourceRequest(mem.Offset()))
		answer := out.ReadBytes()
		kept = append(kept, answer)
		notes = append(notes, string(answer))
		out.Free()
		mem.Free()
	}
	for _, r := range in.Spec.Requests {
		send(string(r))
	}
	for _, r := range in.Spec.Raw {
		send(r)
	}
	_ = extism.OutputJSON(map[string]any{"notes": notes})
	return 0
}

func main() {}
