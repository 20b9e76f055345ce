package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// The shell-operator workload measures the real shell-operator (the one hack/k8s-tools.sh
// builds) over the scenario's CRs, as a pod runs it beside the hooks: what it holds for the CR
// watch, and what it writes for a run. Its hook only records what it was handed, so the rows are
// shell-operator's own. Two watches are measured: the one the host under test configures (its
// `hook --config`) and the same with jqFilter "." and whole objects, as hosts before issue 27 asked.
const workloadShellOperator = "shell-operator"

// soSample is one shell-operator process: from its start to the end of the Synchronization run of
// the CR watch and the schedule run after it.
type soSample struct {
	sync      time.Duration // start to the end of the Synchronization run
	cpu       time.Duration // shell-operator's user+sys when measured
	peak, rss int64         // VmHWM and VmRSS after both runs, bytes
	contexts  []int         // the size of each binding context written, bytes
}

// measureShellOperator runs shell-operator c.runs times for each watch and returns its rows.
func (s *scenario) measureShellOperator(ctx context.Context, c config, hb hostBuild) ([]row, error) {
	if s.env.kube.bin == "" {
		s.env.log("%s: no real API server; the shell-operator workload needs one", s.plugin.Name)
		return nil, nil
	}
	binary := filepath.Join(s.env.kube.bin, "shell-operator")
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("shell-operator workload: %w (run hack/k8s-tools.sh)", err)
	}
	// A schedule every 5 s gives a run with the snapshot alone, as the periodic pass has it.
	env, err := s.hookEnv(s.env.cacheDir)
	if err != nil {
		return nil, err
	}
	env = append(env, s.plugin.EnvPrefix+"_SYNC_CRONTAB=*/5 * * * * *")
	var out, errs strings.Builder
	u, err := measured(ctx, env, &out, &errs, hb.Binary, "hook", "--plugin", hb.Plugin(s.plugin.Name), "--config")
	if err == nil && u.Exit != 0 {
		err = fmt.Errorf("exit status %d: %s", u.Exit, errs.String())
	}
	if err != nil {
		return nil, fmt.Errorf("%s --config: %w", s.plugin.Name, err)
	}
	own, err := withoutRateLimit(out.String())
	if err != nil {
		return nil, err
	}
	whole, err := wholeObjects(own)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, v := range []struct{ name, config string }{{"host's watch", own}, {`jqFilter "."`, whole}} {
		r := row{plugin: s.plugin.Name, shape: s.shape, workload: "shell-operator, " + v.name, host: "—", size: s.size, groups: s.groups}
		for run := range c.runs {
			smp, err := s.runShellOperator(ctx, binary, v.config, run)
			if err != nil {
				return rows, fmt.Errorf("shell-operator with the %s: %w", v.name, err)
			}
			ctxBytes := 0
			if len(smp.contexts) > 0 {
				ctxBytes = smp.contexts[len(smp.contexts)-1]
			}
			r.samples = append(r.samples, sample{Wall: smp.sync, CPU: smp.cpu, RSS: smp.peak, Context: ctxBytes,
				Note: fmt.Sprintf("RSS after the runs %d MiB; Synchronization context %s", smp.rss>>20, byteSize(smp.contexts[0]))})
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// withoutRateLimit is config without its settings: executionMinInterval would hold the schedule
// run 30 s after the Synchronization, which changes nothing shell-operator holds.
func withoutRateLimit(config string) (string, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(config), &doc); err != nil {
		return "", fmt.Errorf("hook --config: %w", err)
	}
	delete(doc, "settings")
	b, err := json.MarshalIndent(doc, "", "  ")
	return string(b), err
}

// wholeObjects is config with the CR watches' jqFilter "." and whole objects kept.
func wholeObjects(config string) (string, error) {
	var doc map[string]any
	if err := json.Unmarshal([]byte(config), &doc); err != nil {
		return "", fmt.Errorf("hook --config: %w", err)
	}
	watches, _ := doc["kubernetes"].([]any)
	for _, w := range watches {
		m, _ := w.(map[string]any)
		if m["jqFilter"] != hookenv.ObjectFilter && m["jqFilter"] != "." {
			return "", fmt.Errorf("hook --config: watch %v has a jqFilter the benchmark does not know", m["name"])
		}
		m["jqFilter"] = "."
		delete(m, "keepFullObjectsInMemory")
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return string(b), err
}

// runShellOperator starts shell-operator with one hook printing config, waits for the
// Synchronization run and one schedule run, reads its memory and stops it.
func (s *scenario) runShellOperator(ctx context.Context, binary, config string, run int) (soSample, error) {
	dir, err := os.MkdirTemp(s.env.state, "shell-operator-")
	if err != nil {
		return soSample{}, err
	}
	defer os.RemoveAll(dir)
	hooks, tmp, log := filepath.Join(dir, "hooks"), filepath.Join(dir, "tmp"), filepath.Join(dir, "runs.log")
	for _, d := range []string{hooks, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return soSample{}, err
		}
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return soSample{}, err
	}
	// The hook records when each run ended and how large its binding context was.
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --config ]; then cat %q; exit 0; fi\n"+
		"echo \"$(date +%%s%%N) $(wc -c < \"$BINDING_CONTEXT_PATH\")\" >> %q\n", cfgPath, log)
	if err := os.WriteFile(filepath.Join(hooks, "bench"), []byte(script), 0o755); err != nil {
		return soSample{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return soSample{}, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var logs strings.Builder
	cmd := exec.CommandContext(ctx, binary, "start", "--kube-config", s.env.kube.direct, "--hooks-dir", hooks, "--tmp-dir", tmp,
		"--listen-address", "127.0.0.1", "--listen-port", strconv.Itoa(port),
		"--debug-unix-socket", filepath.Join(dir, "debug.sock"), "--log-type", "json", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return soSample{}, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var smp soSample
	var ends []time.Time
	// Generous: on a loaded 2-core machine a 5,000-CR Synchronization and the schedule run after it
	// took over a minute.
	deadline := time.Now().Add(time.Duration(60+s.size/25) * time.Second)
	for len(ends) < 2 {
		if time.Now().After(deadline) {
			return smp, fmt.Errorf("run %d: %d of 2 hook runs before the deadline; shell-operator said:\n%s", run, len(ends), tail(logs.String(), 2000))
		}
		time.Sleep(20 * time.Millisecond)
		ends, smp.contexts, err = readRuns(log)
		if err != nil {
			return smp, err
		}
	}
	smp.sync = ends[0].Sub(start)
	if smp.peak, smp.rss, err = procMemory(cmd.Process.Pid); err != nil {
		return smp, err
	}
	smp.cpu, err = procCPU(cmd.Process.Pid)
	return smp, err
}

// readRuns reads what the hook recorded: when each run ended and its context's size.
func readRuns(path string) ([]time.Time, []int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var ends []time.Time
	var sizes []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ns, size int64
		if _, err := fmt.Sscan(sc.Text(), &ns, &size); err != nil {
			continue // a line being written
		}
		ends, sizes = append(ends, time.Unix(0, ns)), append(sizes, int(size))
	}
	return ends, sizes, sc.Err()
}

// procMemory reads a process's peak and current resident set from /proc.
func procMemory(pid int) (peak, rss int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			peak = kb << 10
		case "VmRSS:":
			rss = kb << 10
		}
	}
	return peak, rss, nil
}

// procCPU reads a process's user+sys time from /proc (clock ticks of 10 ms).
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
