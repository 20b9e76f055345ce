//go:build wasip1

// Command rawmock speaks the host ABI through go-pdk directly, without the pdk package, so it can
// break the protocol in ways the pdk never would: malformed JSON, oversized output, a plain-text
// error, a kernel offset out of bounds. Reconcile's behaviour is chosen by the CR's spec.mode.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	extism "github.com/extism/go-pdk"
)

//go:wasmimport extism:host/env load_u64
func loadU64(offset uint64) uint64

//go:wasmimport extism:host/user openstack_request
func openstackRequest(offset uint64) uint64

//go:wasmimport extism:host/user input_read
func inputRead(offset uint64, dst uint32, n uint32) uint32

//go:wasmimport extism:host/user block_write
func blockWrite(src uint32, n uint32) uint64

//go:wasmimport extism:host/user block_read
func blockRead(offset uint64, dst uint32, n uint32) uint32

//go:wasmimport extism:host/user unchanged
func unchanged(parts uint32, n uint32) uint32

//go:wasmexport openstack_sync_abi_v1
func abi() {}

//go:wasmexport metadata
func metadata() int32 {
	extism.OutputString(`{"abi_version":1,"name":"rawmock","noun":"raw thing","env_prefix":"RAW",` +
		`"binding_name":"raws","grants":[],"has_prune":false,"skip_status":true}`)
	return 0
}

//go:wasmexport wait_for_api
func waitForAPI() int32 { return 0 }

// panicIn panics when config PANIC_IN names entry, so each group entry point can be made to fail.
func panicIn(entry string) {
	if v, _ := extism.GetConfig("PANIC_IN"); v == entry {
		panic("rawmock panics in " + entry)
	}
}

//go:wasmexport group_begin
func groupBegin() int32 {
	panicIn("group_begin")
	return 0
}

//go:wasmexport group_end
func groupEnd() int32 {
	panicIn("group_end")
	return 0
}

//go:wasmexport reconcile
func reconcile() int32 {
	var in struct {
		Spec struct {
			Mode   string `json:"mode"`
			Millis int    `json:"millis"`
			Count  uint32 `json:"count"`
		} `json:"spec"`
		Status *json.RawMessage `json:"status"`
	}
	if err := extism.InputJSON(&in); err != nil {
		extism.SetError(err)
		return 1
	}
	switch in.Spec.Mode {
	case "bad-json":
		extism.OutputString(`{"notes": [`)
	case "huge":
		extism.OutputString(`{"notes":["` + strings.Repeat("x", 2<<20) + `"]}`)
	case "plain-error":
		extism.SetErrorString("plain text failure")
		return 1
	case "bad-reasons":
		extism.SetErrorString(`{"message":"long reason","reason":"` + strings.Repeat("R", 1<<20-64) + `"}`)
		return 1
	case "newline-reason":
		extism.SetErrorString(`{"message":"odd reason","reason":"Bad\nReason"}`)
		return 1
	case "error-without-message":
		return 1
	case "chatty":
		fmt.Print(strings.Repeat("chatter ", 100<<10/8))
		extism.OutputString(`{"notes":["said a lot"]}`)
	case "log-flood":
		line := strings.Repeat("y", 64<<10)
		for range 1000 {
			extism.Log(extism.LogError, line)
		}
		extism.OutputString(`{"notes":["logged a lot"]}`)
	case "sandbox":
		// Reports what the sandbox exposes: the host gives no environment and no arguments (files
		// and sockets are not even importable: the loader refuses path_open, fd_readdir, sock_*).
		notes := []string{fmt.Sprintf("env=%q", os.Environ()), fmt.Sprintf("args=%q", os.Args[min(len(os.Args), 1):])}
		_ = extism.OutputJSON(map[string]any{"notes": notes})
	case "sleep":
		time.Sleep(time.Duration(in.Spec.Millis) * time.Millisecond)
		extism.OutputString(`{"notes":["slept"]}`)
	case "huge-error":
		extism.SetErrorString(`{"message":"` + strings.Repeat("E", 1<<20-64) + `"}`)
		return 1
	case "long-path":
		req := extism.AllocateString(`{"service":"network","method":"GET","path":"v2.0/` + strings.Repeat("p", 1<<20) + `"}`)
		mem := extism.FindMemory(openstackRequest(req.Offset()))
		resp := mem.ReadBytes()
		_ = extism.OutputJSON(map[string]any{"notes": []string{string(resp[:min(len(resp), 200)])}})
	case "refused-loop":
		req := extism.AllocateString(`{"service":"network","method":"DELETE","path":"v2.0/networks/x"}`)
		for range 1000 {
			mem := extism.FindMemory(openstackRequest(req.Offset()))
			mem.Free()
		}
		extism.OutputString(`{"notes":["kept trying"]}`)
	case "report-status":
		// The module declares skip_status, so the host must not send one.
		_ = extism.OutputJSON(map[string]any{"notes": []string{fmt.Sprintf("status sent: %v", in.Status != nil)}})
	case "wild-offset":
		loadU64(1 << 40)
	case "wild-input-read":
		inputRead(0, 0xfffffff0, 1<<20)
	case "wild-block-write":
		blockWrite(0xfffffff0, 1<<20)
	case "wild-block-read":
		blockRead(1<<40, 0, 8)
	case "wild-evidence":
		unchanged(0xfffffff0, 4)
	case "evidence-count":
		// count pieces of evidence at address 0, without the pairs behind them: a count whose
		// pairs would span 4 GiB or more (2^29) is one the host must refuse before reading.
		unchanged(0, in.Spec.Count)
	case "evidence-pieces":
		// count empty pieces: the pairs take count*8 bytes of the guest's memory.
		pairs := make([]byte, int(in.Spec.Count)*8)
		hit := unchanged(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(pairs)))), in.Spec.Count)
		_ = extism.OutputJSON(map[string]any{"notes": []string{fmt.Sprint("hit ", hit)}})
	default:
		extism.OutputString(`{"notes":["raw ok"]}`)
	}
	return 0
}

func main() {}
