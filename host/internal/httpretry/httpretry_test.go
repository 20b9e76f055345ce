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
