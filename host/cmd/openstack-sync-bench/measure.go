package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Peak RSS from wait4 is only the hook's own when the process that forked it is small. Linux
// charges a child, at its exec, the peak RSS of the memory it was forked with, and Go starts
// children with vfork semantics (CLONE_VM): the child's maxrss starts at the whole harness's peak.
// Once the harness had held 1,000 CRs (~64 MiB), every later row read at least that much (the
// native rows "after the first 1,000-CR row" of docs/benchmarks.md). So every measured process is
// started by a small launcher, this binary re-executed with launchArg, which forks the hook from a
// few MiB and reports the hook's own wait4 numbers back on a pipe.
const launchArg = "__launch"

// usage is what the launcher reports for one process.
type usage struct {
	Wall, CPU time.Duration
	RSS       int64 // bytes
	Exit      int
	// Err is set when the process could not be started or waited for.
	Err string `json:",omitempty"`
}

// launch is the launcher's main: it runs args with the inherited standard streams and writes the
// usage as JSON to file descriptor 3.
func launch(args []string) int {
	report := os.NewFile(3, "report")
	u := runChild(args)
	if err := json.NewEncoder(report).Encode(u); err != nil {
		fmt.Fprintln(os.Stderr, "openstack-sync-bench launcher:", err)
		return 1
	}
	return 0
}

func runChild(args []string) usage {
	if len(args) == 0 {
		return usage{Err: "nothing to run"}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// A stopped harness stops the launcher with SIGTERM (measured): the hook must not outlive it.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	start := time.Now()
	err := cmd.Start()
	if err == nil {
		done := make(chan struct{})
		go func() {
			select {
			case sig := <-signals:
				cmd.Process.Signal(sig)
			case <-done:
			}
		}()
		err = cmd.Wait()
		close(done)
	}
	u := usage{Wall: time.Since(start)}
	if cmd.ProcessState == nil {
		u.Err = err.Error()
		return u
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	u.RSS = ru.Maxrss * 1024
	u.Exit = cmd.ProcessState.ExitCode()
	return u
}

// measured runs name with args through the launcher, with env and the given output streams, and
// returns the process's own usage. A non-zero exit is reported in usage.Exit, not as an error.
func measured(ctx context.Context, env []string, stdout, stderr io.Writer, name string, args ...string) (usage, error) {
	self, err := os.Executable()
	if err != nil {
		return usage{}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return usage{}, err
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, self, append([]string{launchArg, name}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, stdout, stderr
	// SIGTERM, which the launcher passes on to the hook, rather than a SIGKILL that would leave
	// the hook running on its own.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return usage{}, err
	}
	var u usage
	decodeErr := json.NewDecoder(r).Decode(&u)
	if err := cmd.Wait(); err != nil {
		return u, fmt.Errorf("launcher: %w", err)
	}
	if decodeErr != nil {
		return u, fmt.Errorf("launcher report: %w", decodeErr)
	}
	if u.Err != "" {
		return u, errors.New(u.Err)
	}
	return u, nil
}
