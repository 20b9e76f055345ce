package supervise

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkReportCall is what the child pays per plugin call to have it watched: a Begin and an
// End through the report pipe, read by the parent's reader as Run reads it.
func BenchmarkReportCall(b *testing.B) {
	r, w, err := newReportPipe()
	if err != nil {
		b.Fatal(err)
	}
	rep := &Reporter{f: w}
	batches := make(chan []report, 64)
	go readReports(r, batches, readPause, nil)
	go func() {
		for range batches {
		}
	}()
	deadline := time.Now().Add(time.Hour)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		rep.End(rep.Begin("ironic-runbooks", "reconcile", "bench-0-1000x1/bench-00042", deadline))
	}
	// CPU, both sides: the writer blocks whenever it outruns the reader's pauses, which no real pass
	// does (a call is about a millisecond), so the time per op is not what a pass pays.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	w.Close()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
