//go:build openstack_sync_native && !wasip1

package pdk

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// ServeNative runs a plugin built natively (the openstack_sync_native build tag) as a process the
// benchmark's native test host drives over stdin and stdout, with the same dispatcher, handlers
// and JSON messages as the wasm build and no sandbox. It exists only to measure what the sandbox
// costs (docs/benchmarks.md): it is never part of a shipped plugin. It returns only by exiting
// the process, when the host closes stdin.
//
// Frames are a type byte, a big-endian uint32 length and the payload. The host sends
// 'C' entry "\n" input; the plugin answers 'R' output or 'E' error JSON, and during the call may
// send 'O' openstack_request input (answered by 'A' with the openstack_request output), 'S'
// source_request input (answered by 'A' with its output), 'G' key (answered by 'V' with "1" value
// or "0"), 'U' evidence (answered by 'V' "1" or "0", see nativeHost.Unchanged) and 'L' level-byte
// message.
func ServeNative() {
	h := &nativeHost{r: bufio.NewReaderSize(os.Stdin, 64<<10), w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	stopProfile := startNativeProfile()
	var in instance
	for {
		typ, payload, err := h.read()
		if err == io.EOF {
			stopProfile()
			os.Exit(0)
		}
		if err != nil || typ != 'C' {
			fmt.Fprintf(os.Stderr, "native plugin: bad frame %q: %v\n", typ, err)
			os.Exit(2)
		}
		entry, input := payload, []byte(nil)
		for i, b := range payload {
			if b == '\n' {
				entry, input = payload[:i], payload[i+1:]
				break
			}
		}
		out, werr := in.dispatch(string(entry), input, h)
		if werr != nil {
			b, _ := json.Marshal(werr)
			h.write('E', b)
		} else {
			h.write('R', out)
		}
		if err := h.w.Flush(); err != nil {
			os.Exit(2)
		}
	}
}

type nativeHost struct {
	r *bufio.Reader
	w *bufio.Writer
}

func (h *nativeHost) write(typ byte, payload []byte) {
	var head [5]byte
	head[0] = typ
	binary.BigEndian.PutUint32(head[1:], uint32(len(payload)))
	h.w.Write(head[:])
	h.w.Write(payload)
}

func (h *nativeHost) read() (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(h.r, head[:]); err != nil {
		return 0, nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(head[1:]))
	_, err := io.ReadFull(h.r, b)
	return head[0], b, err
}

// ask sends a request frame and waits for the host's answer of type want.
func (h *nativeHost) ask(typ byte, payload []byte, want byte) []byte {
	h.write(typ, payload)
	if err := h.w.Flush(); err != nil {
		os.Exit(2)
	}
	got, b, err := h.read()
	if err != nil || got != want {
		fmt.Fprintf(os.Stderr, "native plugin: want frame %q, got %q: %v\n", want, got, err)
		os.Exit(2)
	}
	return b
}

func (h *nativeHost) Config(key string) (string, bool) {
	b := h.ask('G', []byte(key), 'V')
	if len(b) == 0 || b[0] != '1' {
		return "", false
	}
	return string(b[1:]), true
}

func (h *nativeHost) Log(level LogLevel, msg string) {
	h.write('L', append([]byte{byte(level)}, msg...))
}

// Unchanged sends 'U' with each piece of evidence as a big-endian uint32 length and its bytes,
// answered by 'V' "1" (a hit) or "0".
func (h *nativeHost) Unchanged(evidence [][]byte) bool {
	var b []byte
	for _, e := range evidence {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	a := h.ask('U', b, 'V')
	return len(a) == 1 && a[0] == '1'
}

func (h *nativeHost) OpenStack(req *Request) (*Response, error) {
	in, err := encodeRequest(req)
	if err != nil {
		return nil, err
	}
	return decodeResponse(h.ask('O', in, 'A'))
}

// Source sends a request to a source outside OpenStack (docs/abi.md section 8), as source_request.
func (h *nativeHost) Source(req *SourceRequest) (*Response, error) {
	in, err := encodeSourceRequest(req)
	if err != nil {
		return nil, err
	}
	return decodeResponse(h.ask('S', in, 'A'))
}

// startNativeProfile writes a CPU profile of this plugin process to the file the native host names
// in OPENSTACK_SYNC_NATIVE_CPUPROFILE: the guest's code profiled by Go's own profiler, which
// the sandboxed build cannot offer (docs/benchmarks.md, "Profiling a hook run").
func startNativeProfile() (stop func()) {
	path := os.Getenv("OPENSTACK_SYNC_NATIVE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "native plugin: cpu profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "native plugin: cpu profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
