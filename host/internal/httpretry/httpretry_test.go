package httpretry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false}, {"  3 ", 3 * time.Second, true}, {"-1", 0, false}, {"soon", 0, false},
		{"Thu, 03 Dec 2026 10:00:30 GMT", 30 * time.Second, true}, {"Thu, 03 Dec 2026 09:00:00 GMT", 0, true},
	}
	for _, c := range cases {
		got, ok := RetryAfter(c.v, now)
		assert.Equal(t, c.ok, ok, c.v)
		assert.Equal(t, c.want, got, c.v)
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second},
		[]time.Duration{Backoff(time.Second, 5*time.Second, 1), Backoff(time.Second, 5*time.Second, 2),
			Backoff(time.Second, 5*time.Second, 3), Backoff(time.Second, 5*time.Second, 4), Backoff(time.Second, 5*time.Second, 99)})
}

func TestSetDefaults(t *testing.T) {
	var timeout, base, most, after time.Duration
	var attempts int
	SetDefaults(&timeout, &attempts, &base, &most, &after)
	assert.Equal(t, []any{30 * time.Second, 4, 500 * time.Millisecond, 10 * time.Second, time.Minute}, []any{timeout, attempts, base, most, after})
	timeout, attempts, base, most, after = time.Second, 1, time.Millisecond, 2*time.Millisecond, 3*time.Second
	SetDefaults(&timeout, &attempts, &base, &most, &after)
	assert.Equal(t, []any{time.Second, 1, time.Millisecond, 2 * time.Millisecond, 3 * time.Second}, []any{timeout, attempts, base, most, after},
		"what is set stays")
}
