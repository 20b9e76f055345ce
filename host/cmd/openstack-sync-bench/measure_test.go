package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is the launcher too, as the harness binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == launchArg {
		os.Exit(launch(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// A measured process's peak RSS is its own, however much the harness holds: forked straight from
// a harness holding 128 MiB, /bin/true reads over 128 MiB (docs/benchmarks.md, the native RSS rows).
func TestPeakRSSIsTheProcesssOwn(t *testing.T) {
	truePath, err := exec.LookPath("true")
	require.NoError(t, err)
	held := make([]byte, 128<<20)
	for i := range held {
		held[i] = 1
	}
	u, err := measured(t.Context(), nil, nil, nil, truePath)
	require.NoError(t, err)
	assert.Less(t, u.RSS, int64(32<<20), "peak RSS of `true` measured through the launcher")
	assert.Zero(t, u.Exit)
	assert.Positive(t, u.Wall)
	assert.Equal(t, byte(1), held[len(held)-1])
}

func TestMeasuredReportsExitAndOutput(t *testing.T) {
	var out, errs strings.Builder
	u, err := measured(t.Context(), []string{"MSG=hello"}, &out, &errs, "/bin/sh", "-c", `echo "$MSG"; echo oops >&2; exit 3`)
	require.NoError(t, err)
	assert.Equal(t, 3, u.Exit)
	assert.Equal(t, "hello\n", out.String())
	assert.Equal(t, "oops\n", errs.String())

	_, err = measured(t.Context(), nil, nil, nil, "/nonexistent/binary")
	assert.ErrorContains(t, err, "/nonexistent/binary")
}

// A stopped harness stops the hook too: the launcher passes the SIGTERM on instead of leaving the
// hook running on its own.
func TestAStoppedMeasurementStopsTheProcess(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, _ = measured(ctx, nil, nil, nil, "/bin/sh", "-c", `echo $$ > `+pidFile+`; exec sleep 60`)
	assert.Less(t, time.Since(start), 20*time.Second, "the measurement returned when stopped")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 50*time.Millisecond,
		"the measured process %d is gone", pid)
}
