package supervise

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModeFromEnv(t *testing.T) {
	cases := []struct {
		env     map[string]string
		trusted bool
		want    Mode
		err     string
	}{
		{want: Process},
		{env: map[string]string{EnvTermination: ""}, want: Process},
		{env: map[string]string{EnvTermination: "checks"}, want: Checks},
		{env: map[string]string{EnvTermination: "process"}, want: Process},
		{env: map[string]string{EnvTermination: "none"}, want: None},
		{trusted: true, want: None},
		{env: map[string]string{EnvTermination: "none"}, trusted: true, want: None},
		{env: map[string]string{EnvTermination: "checks"}, trusted: true, err: "contradicts OPENSTACK_SYNC_WASM_TRUSTED_NO_INTERRUPT=true"},
		{env: map[string]string{EnvTermination: "Process"}, err: EnvTermination + ` must be process, checks or none, got "Process"`},
	}
	for _, c := range cases {
		got, err := ModeFromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }, c.trusted)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "%v", c.env)
			continue
		}
		require.NoError(t, err, "%v", c.env)
		assert.Equal(t, c.want, got, "%v trusted=%v", c.env, c.trusted)
	}
}

// What the child writes is what the parent reads, names with separators included.
func TestReportsRoundTrip(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	rep := &Reporter{f: w}
	batches := make(chan []report, 8)
	go readReports(r, batches, time.Millisecond, nil)

	a := rep.Begin("mock", "reconcile", "ns/a\tb\nc", time.Now().Add(3*time.Second))
	b := rep.Begin("mock", "_initialize", "", time.Time{})
	rep.End(a)
	rep.End(b)
	w.Close()

	var got []report
	for batch := range batches {
		got = append(got, batch...)
	}
	require.Len(t, got, 4)
	assert.True(t, got[0].begin)
	assert.Equal(t, a, got[0].id)
	assert.Equal(t, Overrun{Plugin: "mock", Entry: "reconcile", Object: "ns/a b c", Timeout: 3 * time.Second}, got[0].call)
	assert.Equal(t, time.Duration(-1), got[1].call.Timeout, "no deadline, never enforced")
	assert.Equal(t, "_initialize", got[1].call.Entry)
	assert.Equal(t, report{id: a}, report{id: got[2].id, begin: got[2].begin})
	assert.Equal(t, b, got[3].id)
	assert.False(t, got[3].begin)
}

// A finished step of the pass reaches the parent as the child wrote it; one that cannot be one
// short line is not sent (the pass run again repeats it rather than misread it).
func TestFinishedStepsRoundTrip(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	rep := &Reporter{f: w}
	batches := make(chan []report, 8)
	go readReports(r, batches, time.Millisecond, nil)
	rep.Done([]byte(`{"kind":"reconcile","key":"uid-a","outcome":"ok"}`))
	rep.Done([]byte("two\nlines"))
	rep.Done([]byte(strings.Repeat("x", maxLine)))
	rep.Done([]byte(`{"kind":"prune","key":"ns\u0000s1\u0000c1","outcome":"ok"}`))
	w.Close()
	var steps []string
	for batch := range batches {
		for _, rep := range batch {
			steps = append(steps, string(rep.step))
		}
	}
	assert.Equal(t, []string{`{"kind":"reconcile","key":"uid-a","outcome":"ok"}`,
		`{"kind":"prune","key":"ns\u0000s1\u0000c1","outcome":"ok"}`}, steps)
}

// Once the child has exited, the reader reads what is left without its pause: the hook's exit
// must not wait for it (a pause of an hour here would hold the test until its deadline).
func TestTheReaderDrainsAnExitedChildWithoutPausing(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	rep := &Reporter{f: w}
	batches := make(chan []report, 8)
	drain := make(chan struct{})
	go readReports(r, batches, time.Hour, drain)
	rep.Begin("mock", "reconcile", "ns/a", time.Now().Add(time.Second))
	first := <-batches
	require.Len(t, first, 1, "the first read")
	rep.Done([]byte(`{"kind":"reconcile","key":"uid-a","outcome":"ok"}`)) // written during the pause
	w.Close()
	close(drain)
	var steps []string
	for batch := range batches {
		for _, rep := range batch {
			steps = append(steps, string(rep.step))
		}
	}
	assert.Equal(t, []string{`{"kind":"reconcile","key":"uid-a","outcome":"ok"}`}, steps,
		"what the child wrote before it exited is read")
}

func TestAReportIsOneShortLine(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	rep := &Reporter{f: w}
	rep.Begin(strings.Repeat("p", 5000), "reconcile", strings.Repeat("o", 5000), time.Now().Add(time.Second))
	w.Close()
	buf := make([]byte, 2*maxLine)
	n, _ := r.Read(buf)
	assert.LessOrEqual(t, n, maxLine, "at most PIPE_BUF, so concurrent reports never interleave")
	assert.Equal(t, byte('\n'), buf[n-1])
}

func TestGrace(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{
		300 * time.Millisecond: time.Second, 20 * time.Second: 2 * time.Second, time.Minute: 5 * time.Second,
		time.Hour: 5 * time.Second,
	} {
		assert.Equal(t, want, Grace(timeout), "timeout %s", timeout)
	}
}

func TestChildReporterRefusesADescriptorThatIsNotThePipe(t *testing.T) {
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == EnvChild }
	}
	rep, err := ChildReporter(func(string) (string, bool) { return "", false })
	assert.NoError(t, err)
	assert.Nil(t, rep, "not a child")
	_, err = ChildReporter(env("7"))
	assert.ErrorContains(t, err, EnvChild+" is internal to the hook's supervisor and must be 3")
}
