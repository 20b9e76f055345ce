package wasm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
)

// LoadNative runs a native build of a plugin (pdk.ServeNative, the openstack_sync_native build
// tag) behind the same Plugin as a wasm module: the same pool and group pinning, metadata checks,
// grants, openstack_request handling and result decoding, with a process per instance speaking
// a small framed protocol over pipes instead of a sandbox. It is the native limit of the
// benchmark (docs/benchmarks.md) and nothing else: a native plugin is not contained.
func LoadNative(ctx context.Context, exe string, opts Options) (plugin.Plugin, error) {
	o, err := opts.fromEnv()
	if err != nil {
		return nil, &LoadError{Path: exe, Reason: "invalid sandbox configuration", Err: err}
	}
	p := &Plugin{path: exe, name: pluginName(exe), opts: o, native: exe, hasGroup: true,
		logLevel: extismLevel(ctx, o.Logger)}
	p.log = o.Logger.With("plugin", p.name)
	p.pool = newPool(o.PoolSize, o.CallTimeout, p.newInstance)
	// Every entry point exists in a pdk build.
	if err := p.readMetadata(ctx, map[string]api.FunctionDefinition{EntryPrune: nil, EntryDelete: nil, EntryRemark: nil}); err != nil {
		p.Close(ctx)
		return nil, err
	}
	// The memo, as a module gets it, so the native limit measures the same work. The build is
	// named by its file's size and time rather than hashed: this is a benchmark, not a sandbox.
	if fi, err := os.Stat(exe); err == nil && o.Memo {
		if dir := o.cacheDir(); dir != "" && probeWritable(dir) == nil {
			p.sha256 = fmt.Sprintf("native:%s:%d:%d", exe, fi.Size(), fi.ModTime().UnixNano())
			p.digest = sha256.Sum256([]byte(p.sha256))
			p.memo = p.newMemo(modulecache.Dir(dir))
		}
	}
	return p, nil
}

type nativeProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	w     *bufio.Writer
	r     *bufio.Reader
}

func (n *nativeProc) close() {
	n.stdin.Close()
	if n.cmd.Wait() != nil {
		n.cmd.Process.Kill()
	}
}

func (n *nativeProc) write(typ byte, payload []byte) error {
	var head [5]byte
	head[0] = typ
	binary.BigEndian.PutUint32(head[1:], uint32(len(payload)))
	n.w.Write(head[:])
	n.w.Write(payload)
	return n.w.Flush()
}

func (n *nativeProc) read() (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(n.r, head[:]); err != nil {
		return 0, nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(head[1:]))
	_, err := io.ReadFull(n.r, b)
	return head[0], b, err
}

func (p *Plugin) newNativeInstance() (*instance, error) {
	out := &boundedBuffer{max: outputCaptureBytes}
	cmd := exec.Command(p.native)
	cmd.Env = []string{}
	if prefix, ok := p.opts.LookupEnv(NativeCPUProfileEnv); ok && prefix != "" {
		// One profile per plugin process: the guest's own code, which the host's profile of a
		// sandboxed run shows only as external code (docs/benchmarks.md, "Profiling a hook run").
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s.%d-%d.pprof", NativeCPUProfileEnv, prefix, os.Getpid(), p.nextID.Load()+1))
	}
	cmd.Stderr = out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, &LoadError{Path: p.native, Reason: "cannot start the native plugin", Err: err}
	}
	proc := &nativeProc{cmd: cmd, stdin: stdin, w: bufio.NewWriterSize(stdin, 64<<10), r: bufio.NewReaderSize(stdout, 64<<10)}
	return &instance{id: p.nextID.Add(1), proc: proc, output: out}, nil
}

// NativeCPUProfileEnv, set for a native host, makes every native plugin process it starts write a
// CPU profile of itself to <value>.<host pid>-<instance>.pprof when it exits.
const NativeCPUProfileEnv = "OPENSTACK_SYNC_NATIVE_CPUPROFILE"

// nativeLevels maps the pdk's log levels to the kernel's.
var nativeLevels = map[byte]int32{1: kernel.LevelDebug, 2: kernel.LevelInfo, 3: kernel.LevelWarn, 4: kernel.LevelError}

// invokeNative is invoke for a native instance: the call, then the plugin's requests until its
// answer.
func (p *Plugin) invokeNative(ctx context.Context, inst *instance, ci *callInfo, input []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { inst.proc.cmd.Process.Kill() })
	defer stop()
	cctx := context.WithValue(ctx, callKey{}, ci)
	fail := func(err error) ([]byte, error) {
		inst.broken = true
		text, _ := inst.output.take()
		e := &CallError{Plugin: p.name, Entry: ci.entry, Kind: "trap", Detail: err.Error(), Err: err}
		if ctx.Err() != nil {
			e.Kind, e.Detail = "timeout", fmt.Sprintf("did not finish within %s", p.opts.CallTimeout)
		}
		if text != "" {
			e.Detail += ": " + strings.TrimSpace(text)
		}
		return nil, e
	}
	if err := inst.proc.write('C', append(append([]byte(ci.entry), '\n'), input...)); err != nil {
		return fail(err)
	}
	for {
		typ, b, err := inst.proc.read()
		if err != nil {
			return fail(err)
		}
		switch typ {
		case 'O':
			err = inst.proc.write('A', p.serve(cctx, ci, b))
		case 'G':
			v, ok := p.lookupConfig(string(b))
			if ok {
				err = inst.proc.write('V', append([]byte{'1'}, v...))
			} else {
				err = inst.proc.write('V', []byte{'0'})
			}
		case 'L':
			if len(b) > 0 && nativeLevels[b[0]] >= p.logLevel {
				p.guestLog(cctx, nativeLevels[b[0]], string(b[1:]))
			}
		case 'U':
			var hit bool
			evidence := splitEvidence(b)
			if hit, err = p.unchanged(cctx, len(evidence), func(i int) []byte { return evidence[i] }); err == nil {
				err = inst.proc.write('V', []byte{map[bool]byte{false: '0', true: '1'}[hit]})
			}
		case 'R':
			return b, nil
		case 'E':
			return nil, p.errorFrom(b, ci.entry)
		default:
			err = fmt.Errorf("unknown frame %q", typ)
		}
		if err != nil {
			return fail(err)
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
