package hook

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A hook run collects at GCPercent unless the pod's GOGC chose (docs/scaling.md): the peak RSS
// targets of docs/benchmarks.md depend on it.
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
			tuneGC(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			assert.Equal(t, c.want, debug.SetGCPercent(100))
		})
	}
}
