package hook

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A hook run collects at GCPercent unless the pod's GOGC chose (docs/scaling.md): the peak RSS
// targets of docs/benchmarks.md depend on it. The target takes effect after the first cycle,
// which runs at Go's default, so a small heap is not collected from 1 MiB on.
func TestTuneGC(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"unset", nil, GCPercent},
		{"blank", map[string]string{"GOGC": ""}, GCPercent},
		{"the pod's GOGC wins", map[string]string{"GOGC": "200"}, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			prev := debug.SetGCPercent(100)
			defer debug.SetGCPercent(prev)
			set := make(chan int, 1)
			setGCPercent = func(p int) int { set <- p; return debug.SetGCPercent(p) }
			defer func() { setGCPercent = debug.SetGCPercent }()
			tuneGC(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			assert.Equal(t, 100, debug.SetGCPercent(100), "Go's default until the first collection")
			if c.want == 100 {
				runtime.GC()
				runtime.GC()
				assert.Empty(t, set, "the pod's GOGC is left alone")
				return
			}
			for got := false; !got; {
				runtime.GC()
				select {
				case p := <-set:
					assert.Equal(t, c.want, p)
					got = true
				default:
					runtime.Gosched()
				}
			}
			assert.Equal(t, c.want, debug.SetGCPercent(100), "the run's target after it")
		})
	}
}
