package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// The operator's limit, not client-go's default of 5 per second, governs a run's requests, and
// 0 removes the client's own limit altogether.
func TestTheClientKeepsTheGivenRequestLimit(t *testing.T) {
	tests := []struct {
		name  string
		cfg   rest.Config
		limit Limit
		want  float32 // 0: no client-side limiter
	}{
		{name: "a rate", limit: Limit{QPS: 200, Burst: 400}, want: 200},
		{name: "the limit replaces the configuration's", cfg: rest.Config{QPS: 5, Burst: 10}, limit: Limit{QPS: 75, Burst: 1}, want: 75},
		{name: "no limit", cfg: rest.Config{QPS: 5, Burst: 10}, limit: Limit{QPS: 0, Burst: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Host = "https://127.0.0.1:1"
			c, err := NewForConfig(&cfg, tt.limit)
			require.NoError(t, err)
			rl := c.rest.GetRateLimiter()
			if tt.want == 0 {
				assert.Nil(t, rl)
				return
			}
			require.NotNil(t, rl)
			assert.Equal(t, tt.want, rl.QPS())
		})
	}
}
