// Package nativeplugin runs a native build of a plugin (pdk.ServeNative, the
// openstack_sync_native build tag) as a process per instance speaking a small framed protocol
// over pipes, behind the wasm host's Plugin (wasm.External): the same pool, metadata checks,
// grants, requests, memo and result decoding as a sandboxed module. It is the benchmark's native
// limit (docs/benchmarks.md) and nothing else.
//
// Trust: none is needed and none is given. A native plugin is not contained: it runs with the
// host's privileges, reads any file and reaches any network. Only the benchmark's native test
// host (host/cmd/openstack-sync-native) wires this package; host/internal/layering forbids the
// production command and the framework packages to link it.
package nativeplugin

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync/atomic"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
)

// CPUProfileEnv, set for a native host, makes every native plugin process it starts write a CPU
// profile of itself to <value>.<host pid>-<instance>.pprof when it exits.
const CPUProfileEnv = "OPENSTACK_SYNC_NATIVE_CPUPROFILE"

// Load loads the native plugin executable exe behind a plugin.Plugin.
func Load(ctx context.Context, exe string, opts wasm.Options) (plugin.Plugin, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv // as the wasm host's Options default it
	}
	return wasm.LoadExternal(ctx, exe, &runner{exe: exe, lookup: lookup}, opts)
}

// runner starts the processes of one native plugin.
type runner struct {
	exe    string
	lookup func(string) (string, bool)
	// started counts the processes, to name their profiles.
	started atomic.Uint64
}

// MemoKey names the build by its file's size and time rather than hashing it: this is a
// benchmark, not a sandbox.
func (r *runner) MemoKey() string {
	fi, err := os.Stat(r.exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("native:%s:%d:%d", r.exe, fi.Size(), fi.ModTime().UnixNano())
}

func (r *runner) Start(_ context.Context, stderr io.Writer) (wasm.ExternalInstance, error) {
	n := r.started.Add(1)
	cmd := exec.Command(r.exe)
	cmd.Env = []string{}
	if prefix, ok := r.lookup(CPUProfileEnv); ok && prefix != "" {
		// One profile per plugin process: the guest's own code, which the host's profile of a
		// sandboxed run shows only as external code (docs/benchmarks.md, "Profiling a hook run").
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s.%d-%d.pprof", CPUProfileEnv, prefix, os.Getpid(), n))
	}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd, stdin: stdin, w: bufio.NewWriterSize(stdin, 64<<10), r: bufio.NewReaderSize(stdout, 64<<10)}, nil
}

// proc is one plugin process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	w     *bufio.Writer
	r     *bufio.Reader
}

func (n *proc) Close() {
	n.stdin.Close()
	if n.cmd.Wait() != nil {
		n.cmd.Process.Kill()
	}
}

// A frame is a type byte, a big-endian uint32 length and the payload.
func (n *proc) write(typ byte, payload []byte) error {
	var head [5]byte
	head[0] = typ
	binary.BigEndian.PutUint32(head[1:], uint32(len(payload)))
	n.w.Write(head[:])
	n.w.Write(payload)
	return n.w.Flush()
}

func (n *proc) read() (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(n.r, head[:]); err != nil {
		return 0, nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(head[1:]))
	_, err := io.ReadFull(n.r, b)
	return head[0], b, err
}

// levels maps the pdk's log levels to the kernel's.
var levels = map[byte]int32{1: kernel.LevelDebug, 2: kernel.LevelInfo, 3: kernel.LevelWarn, 4: kernel.LevelError}

// Call sends the call, then serves the plugin's requests until its answer. The process is killed
// when ctx ends, which ends the read in progress.
func (n *proc) Call(ctx context.Context, entry string, input []byte, host wasm.HostCalls) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { n.cmd.Process.Kill() })
	defer stop()
	if err := n.write('C', append(append([]byte(entry), '\n'), input...)); err != nil {
		return nil, err
	}
	for {
		typ, b, err := n.read()
		if err != nil {
			return nil, err
		}
		switch typ {
		case 'O':
			err = n.write('A', host.Request(b))
		case 'S':
			err = n.write('A', host.Source(b))
		case 'G':
			if v, ok := host.Config(string(b)); ok {
				err = n.write('V', append([]byte{'1'}, v...))
			} else {
				err = n.write('V', []byte{'0'})
			}
		case 'L':
			if len(b) > 0 {
				if level, ok := levels[b[0]]; ok {
					host.Log(level, string(b[1:]))
				}
			}
		case 'U':
			var hit bool
			if hit, err = host.Unchanged(splitEvidence(b)); err == nil {
				err = n.write('V', []byte{map[bool]byte{false: '0', true: '1'}[hit]})
			}
		case 'R':
			return b, nil
		case 'E':
			return nil, &wasm.GuestError{Raw: b}
		default:
			err = fmt.Errorf("unknown frame %q", typ)
		}
		if err != nil {
			return nil, err
		}
	}
}

// splitEvidence reads the 'U' frame's pieces: each a big-endian uint32 length and its bytes.
func splitEvidence(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 4 {
		n := binary.BigEndian.Uint32(b)
		b = b[4:]
		n = min(n, uint32(len(b)))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}
