package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/sys"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// CallError is a call that failed inside the sandbox or broke the ABI: a panic, a trap, a
// timeout, memory exhaustion, a kernel fault or an unreadable output. The instance it ran on is
// discarded.
type CallError struct {
	Plugin string
	Entry  string
	// Kind is one of "panic", "trap", "timeout", "cancelled", "out of memory", "exit", "abi", "protocol".
	Kind   string
	Detail string
	Err    error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("wasm plugin %q %s: %s: %s", e.Plugin, e.Entry, e.Kind, e.Detail)
}

func (e *CallError) Unwrap() error { return e.Err }

// callInfo is what host functions learn about the call they serve.
type callInfo struct {
	entry   string
	session plugin.Session
	object  *plugin.Object
	log     *slog.Logger
	// permanent is the first Session error marked permanent during the call.
	permanent error
	// refused counts the requests refused by the grant; only the first few are logged one by one.
	refused int
	// memo is the reconcile's use of the convergence memo; nil outside a reconcile or with the
	// memo off.
	memo *memoCall
}

// maxRefusalLogs is how many refused requests of one call are logged one by one: a guest retrying
// a refused request in a loop must not flood the log.
const maxRefusalLogs = 5

type callKey struct{}

func callFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callKey{}).(*callInfo)
	return ci
}

// invoke runs entry on inst with input and returns the guest's output. Any failure other than an
// error the guest reported marks inst broken.
func (p *Plugin) invoke(ctx context.Context, inst *instance, ci *callInfo, input []byte) (out []byte, err error) {
	entry := ci.entry
	if !inst.busy.CompareAndSwap(false, true) {
		inst.broken = true
		return nil, &CallError{Plugin: p.name, Entry: entry, Kind: "abi", Detail: "instance used by two goroutines at once (host bug)"}
	}
	defer inst.busy.Store(false)
	if !inst.admits(ci.session) {
		inst.broken = true // replaced by a fresh instance for the next call
		return nil, &CallError{Plugin: p.name, Entry: entry, Kind: "abi",
			Detail: "the instance served another credential group (host bug); the call was not run"}
	}
	if inst.ext != nil {
		return p.invokeExternal(ctx, inst, ci, input)
	}
	fn := inst.fns[entry]
	if fn == nil {
		return nil, &CallError{Plugin: p.name, Entry: entry, Kind: "abi", Detail: "the module does not export this entry point"}
	}
	if len(input) > p.opts.MaxInputBytes {
		p.refused("limit")
		return nil, &CallError{Plugin: p.name, Entry: entry, Kind: "protocol",
			Detail: fmt.Sprintf("input of %d bytes exceeds the limit of %d bytes", len(input), p.opts.MaxInputBytes)}
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	inst.state.Reset(input)
	cctx := kernel.WithState(context.WithValue(ctx, callKey{}, ci), inst.state)
	wid, watched := p.watchBegin(ctx, entry, ci.object)
	res, callErr := fn.Call(cctx)
	p.watchEnd(wid, watched)
	if callErr == nil && ctx.Err() != nil {
		// The guest returned after its deadline (a host function saw it first): its answer may
		// be partial, and its state may be mid-update, so it counts as timed out.
		callErr = ctx.Err()
	}
	text, dropped := inst.output.take()
	if ci.refused > maxRefusalLogs {
		ci.log.Warn("more OpenStack requests refused than logged", "entry", entry, "refused", ci.refused,
			"logged", maxRefusalLogs)
	}
	if n := inst.state.LogDropped(); n > 0 {
		ci.log.Warn("plugin log messages dropped: the call logged more than its budget", "entry", entry,
			"dropped_messages", n, "budget_bytes", kernel.DefaultLogBytes)
	}
	if callErr != nil {
		inst.broken = true
		e := p.classify(ctx, entry, callErr, text)
		p.refused(plugin.SandboxRefusal(e))
		p.logOutput(ci, slog.LevelError, text, dropped)
		ci.log.Error("plugin call failed; its instance is discarded", "entry", entry, "error", e.Error())
		return nil, e
	}
	p.logOutput(ci, slog.LevelInfo, text, dropped)
	if len(res) != 1 || uint32(res[0]) != 0 {
		if ci.refused > 0 {
			return nil, &grantRefusedError{err: p.guestError(inst, entry), refused: ci.refused}
		}
		return nil, p.guestError(inst, entry)
	}
	out, _ = inst.state.Output()
	return out, nil
}

// classify names what went wrong in a failed guest call.
func (p *Plugin) classify(ctx context.Context, entry string, err error, output string) error {
	e := &CallError{Plugin: p.name, Entry: entry, Err: err}
	var exit *sys.ExitError
	var fault *kernel.Fault
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded,
		errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Kind = "timeout"
		limit := p.opts.CallTimeout
		if entry == "_initialize" {
			limit = max(limit, minStartTimeout) // what newInstance gave the start
		}
		e.Detail = fmt.Sprintf("did not finish within %s; the instance was stopped", limit)
	case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled, errors.Is(ctx.Err(), context.Canceled):
		e.Kind = "cancelled"
		e.Detail = "the call was cancelled; the instance was stopped"
	case errors.As(err, &fault):
		e.Kind = "abi"
		e.Detail = fault.Error()
	case strings.Contains(output, "out of memory"):
		e.Kind = "out of memory"
		e.Detail = fmt.Sprintf("the guest exhausted its memory limit of %d MiB", p.opts.MemoryLimitPages/16)
	case panicLine(output) != "":
		e.Kind = "panic"
		e.Detail = panicLine(output)
	case errors.As(err, &exit):
		e.Kind = "exit"
		e.Detail = fmt.Sprintf("the guest exited with code %d", exit.ExitCode())
	default:
		e.Kind = "trap"
		e.Detail, _, _ = strings.Cut(err.Error(), "\n")
	}
	return e
}

// panicLine returns the first line of a Go panic in the guest's output, without its "panic: ".
func panicLine(output string) string {
	for line := range strings.Lines(output) {
		if rest, ok := strings.CutPrefix(line, "panic: "); ok {
			rest = strings.TrimSuffix(strings.TrimSpace(rest), " [recovered]")
			return rest
		}
	}
	return ""
}

// guestError turns the error a guest reported through error_set into a Go error, keeping its
// reason and permanence. A plain-text error (another Extism PDK) is its own message.
func (p *Plugin) guestError(inst *instance, entry string) error {
	raw, _ := inst.state.Error()
	return p.errorFrom(raw, entry)
}

func (p *Plugin) errorFrom(raw []byte, entry string) error {
	if len(raw) == 0 {
		return fmt.Errorf("wasm plugin %q %s: failed without an error message", p.name, entry)
	}
	var m abi.Error
	if raw[0] == '{' && json.Unmarshal(raw, &m) == nil && m.Message != "" {
		err := error(errors.New(cutMessage(m.Message)))
		if m.Reason != "" && !abi.ValidReason(m.Reason) {
			// The reason lands in the CR's Ready condition and the printed REASON column; a guest
			// must not be able to put a megabyte or a line break there.
			p.log.Warn("plugin error reason dropped: not a CamelCase word of at most 128 characters",
				"entry", entry, "reason", m.Reason[:min(len(m.Reason), 128)])
			m.Reason = ""
		}
		if m.Reason != "" {
			err = plugin.WithReason(m.Reason, err)
		}
		if m.Permanent {
			err = plugin.Permanent(err)
		}
		return err
	}
	return errors.New(cutMessage(string(raw)))
}

func cutMessage(s string) string {
	if len(s) <= abi.MaxErrorMessage {
		return s
	}
	n := abi.MaxErrorMessage
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d more bytes cut)", s[:n], len(s)-n)
}

// finish applies the rule that a permanent Session error during a call makes the call's error
// permanent and carries its message, whatever the guest made of it.
func finish(ci *callInfo, err error) error {
	if ci.permanent == nil {
		return err
	}
	if err == nil {
		return plugin.Permanent(ci.permanent)
	}
	if plugin.IsPermanent(err) && strings.Contains(err.Error(), ci.permanent.Error()) {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, ci.permanent.Error()) {
		msg += ": " + ci.permanent.Error()
	}
	out := errors.New(msg)
	if r := plugin.Reason(err); r != "" {
		out = plugin.WithReason(r, out)
	}
	return plugin.Permanent(out)
}

func (p *Plugin) logOutput(ci *callInfo, level slog.Level, text string, dropped int) {
	if text == "" {
		return
	}
	attrs := []any{"entry", ci.entry, "output", strings.TrimRight(text, "\n")}
	if dropped > 0 {
		attrs = append(attrs, "dropped_bytes", dropped)
	}
	ci.log.Log(context.Background(), level, "plugin wrote to stdout/stderr", attrs...)
}
