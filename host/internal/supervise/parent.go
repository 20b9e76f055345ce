package supervise

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Overrun is the call the parent stopped the child for.
type Overrun struct {
	Plugin, Entry string
	// Object is the CR the call served ("namespace/name"), "" when none.
	Object string
	// Timeout is the deadline the call had, counted from when it began.
	Timeout time.Duration
}

// Progress is what a killed child had finished when it was killed, for the pass run again.
type Progress struct {
	// Start is when the run began (in the parent): the run's time budget counts from it.
	Start time.Time
	// Steps are the child's journal lines (Reporter.Done), in order.
	Steps [][]byte
}

// Config is what Run needs.
type Config struct {
	// Args are the child's arguments (the hook command's own); Exe the binary, default this one.
	Args []string
	Exe  string
	// Env is the child's environment, default this process's; EnvChild is added.
	Env []string
	// Stdin, Stdout and Stderr are the child's, passed through.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Log            *slog.Logger
	// Overrun runs after the child was killed for o, unless the parent was asked to stop; its
	// result is the exit code. It is where the pass runs again with the checks on, taking p as
	// done: the child's finished steps and the run's start.
	Overrun func(ctx context.Context, o Overrun, p Progress) int
	// Unsupervised runs the pass in this process when no child can be started (it is then
	// still contained, by the checks). Its result is the exit code.
	Unsupervised func(ctx context.Context) int
}

// Exit codes of the parent's own outcomes; otherwise the child's code is the parent's.
const (
	exitFail = 1
	// exitSignal is added to the number of a signal that ended the child after the parent
	// forwarded it, as a shell reports it.
	exitSignal = 128
)

// Grace is how long past its deadline a call may still return before the child is killed. A
// call at its deadline inside a host function returns at once with the deadline's error; the
// grace covers a loaded node's scheduling and the report's trip through the pipe, so that only a
// guest that does not return at all is killed.
func Grace(timeout time.Duration) time.Duration {
	return min(max(timeout/10, time.Second), 5*time.Second)
}

// Signals are forwarded to the child.
var forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM}

// Run starts the child, forwards signals to it, watches its reports, and returns its exit code;
// see the package comment.
func Run(ctx context.Context, c Config) int {
	progress := Progress{Start: time.Now()}
	exe := c.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			c.Log.Warn("cannot start the supervised hook process; running the pass in this process with termination checks",
				"error", err.Error())
			return c.Unsupervised(ctx)
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	r, w, err := newReportPipe()
	if err != nil {
		c.Log.Warn("cannot start the supervised hook process; running the pass in this process with termination checks",
			"error", err.Error())
		return c.Unsupervised(ctx)
	}
	cmd := exec.Command(exe, c.Args...)
	cmd.Env = append(withoutChild(orEnviron(c.Env)), EnvChild+"="+strconv.Itoa(childFD))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = parentDeathSignal()
	// The kernel signals the child when the thread that started it ends (parentDeathSignal); a
	// locked goroutine keeps that thread until the child is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		c.Log.Warn("cannot start the supervised hook process; running the pass in this process with termination checks",
			"error", err.Error())
		return c.Unsupervised(ctx)
	}
	reports := make(chan []report, 4)
	// Closed when the child has exited: what it wrote is all in the pipe, and the run's exit
	// must not wait out the reader's pause (readReports).
	drain := make(chan struct{})
	go readReports(r, reports, readPause, drain)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	calls := map[uint64]openCall{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var (
		killed    *Overrun
		signalled os.Signal
	)
	for {
		select {
		case batch, ok := <-reports:
			if !ok {
				reports = nil
				continue
			}
			for _, rep := range batch {
				if rep.step != nil {
					progress.Steps = append(progress.Steps, rep.step)
					continue
				}
				if rep.begin {
					if rep.call.Timeout >= 0 {
						calls[rep.id] = openCall{call: rep.call, due: rep.at.Add(rep.call.Timeout + Grace(rep.call.Timeout))}
					}
				} else {
					delete(calls, rep.id)
				}
			}
			rearm(timer, calls)
		case <-timer.C:
			now := time.Now()
			for _, oc := range calls {
				if killed == nil && !now.Before(oc.due) {
					o := oc.call
					killed = &o
				}
			}
			if killed == nil {
				rearm(timer, calls)
				continue
			}
			_ = cmd.Process.Kill()
		case s := <-sigs:
			signalled = s
			_ = cmd.Process.Signal(s)
		case err := <-exited:
			// The reports still in the pipe when the child died are the last it finished: read
			// to the pipe's end (the child's end closed when it exited) before closing ours.
			close(drain)
			for reports != nil {
				batch, ok := <-reports
				if !ok {
					break
				}
				for _, rep := range batch {
					if rep.step != nil {
						progress.Steps = append(progress.Steps, rep.step)
					}
				}
			}
			r.Close()
			return c.outcome(ctx, cmd, err, killed, signalled, progress)
		}
	}
}

// outcome turns how the child ended into the parent's exit code.
func (c Config) outcome(ctx context.Context, cmd *exec.Cmd, err error, killed *Overrun, signalled os.Signal, p Progress) int {
	if killed != nil {
		attrs := []any{"plugin", killed.Plugin, "entry", killed.Entry}
		if killed.Object != "" {
			attrs = append(attrs, "cr", killed.Object)
		}
		attrs = append(attrs, "timeout", killed.Timeout.String(), "grace", Grace(killed.Timeout).String())
		if signalled != nil {
			// Asked to stop: the pass is not run again; the next run starts where this one ended.
			c.Log.Error("plugin call overran its deadline while the hook was stopping; the hook process was killed",
				append(attrs, "signal", signalled.String())...)
			return exitFail
		}
		c.Log.Error("plugin call overran its deadline; the hook process was killed and the pass runs again in-process "+
			"with termination checks", append(attrs, "finished_steps", len(p.Steps))...)
		return c.Overrun(ctx, *killed, p)
	}
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		c.Log.Error("waiting for the supervised hook process failed", "error", err.Error())
		return exitFail
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return exit.ExitCode()
	}
	if signalled != nil && ws.Signal() == signalled {
		return exitSignal + int(ws.Signal())
	}
	// Not a signal the parent sent: the kernel's OOM killer, a crash, or someone else. Running
	// the pass again could meet the same end; the next run of the hook starts afresh.
	c.Log.Error("the hook process died on a signal the supervisor did not send; the pass is not run again",
		"signal", ws.Signal().String(), "pid", cmd.Process.Pid)
	return exitFail
}

type openCall struct {
	call Overrun
	due  time.Time
}

// rearm sets the timer to the earliest due call, or stops it when none is open.
func rearm(t *time.Timer, calls map[uint64]openCall) {
	t.Stop()
	var first time.Time
	for _, oc := range calls {
		if first.IsZero() || oc.due.Before(first) {
			first = oc.due
		}
	}
	if !first.IsZero() {
		t.Reset(time.Until(first))
	}
}

type report struct {
	begin bool
	id    uint64
	call  Overrun
	at    time.Time
	// step is a finished step of the pass (Reporter.Done), when the report is one.
	step []byte
}

// readPause is how long the reader waits after each read, so that the reports of many short
// calls arrive in one read: a converged CR is about one call of a millisecond, and waking the
// parent for each of its two lines cost more CPU than the child's writes (docs/benchmarks.md).
// The pipe holds far more than the child can write meanwhile, and a report read late by this
// much only moves a deadline by a fraction of the grace.
const readPause = 50 * time.Millisecond

// readReports parses the child's lines until the pipe closes and sends them in batches, one per
// read. A line it cannot read is skipped: the child is the same binary, so it can only be a bug,
// and the deadline of every call it did read still holds. Once drain is closed (the child has
// exited) it reads on without pausing: a pause then only delays the hook's exit (up to two of
// them, ~80 ms of a converged single-CR run's wall; docs/benchmarks.md, "Start-up of a hook run").
func readReports(r io.Reader, out chan<- []report, pause time.Duration, drain <-chan struct{}) {
	defer close(out)
	timer := time.NewTimer(pause)
	timer.Stop()
	buf := make([]byte, 64<<10)
	var pending []byte
	for {
		n, err := r.Read(buf)
		at := time.Now()
		if n > 0 {
			data := append(pending, buf[:n]...)
			var batch []report
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					break
				}
				if rep, ok := parseReport(string(data[:i]), at); ok {
					batch = append(batch, rep)
				}
				data = data[i+1:]
			}
			if len(data) > maxLine {
				data = nil // not a report; the next newline starts a fresh line
			}
			pending = append(pending[:0], data...)
			if len(batch) > 0 {
				out <- batch
			}
		}
		if err != nil {
			return
		}
		timer.Reset(pause)
		select {
		case <-timer.C:
		case <-drain:
			timer.Stop()
		}
	}
}

func parseReport(line string, at time.Time) (report, bool) {
	if step, ok := strings.CutPrefix(line, "D\t"); ok {
		return report{step: []byte(step), at: at}, step != ""
	}
	f := strings.Split(line, "\t")
	if len(f) < 2 {
		return report{}, false
	}
	id, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return report{}, false
	}
	switch {
	case f[0] == "E":
		return report{id: id, at: at}, true
	case f[0] == "B" && len(f) == 6:
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return report{}, false
		}
		// The child counts what is left of a deadline it set a moment before: rounded, it
		// reads as the configured timeout in the log.
		timeout := time.Duration(ns)
		if timeout > 0 {
			timeout = timeout.Round(time.Millisecond)
		}
		return report{begin: true, id: id, at: at,
			call: Overrun{Timeout: timeout, Plugin: f[3], Entry: f[4], Object: f[5]}}, true
	}
	return report{}, false
}

func orEnviron(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

func withoutChild(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvChild+"=") {
			out = append(out, kv)
		}
	}
	return out
}
