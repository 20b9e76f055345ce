package kubeapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsNotFound(t *testing.T) {
	secretGone := &APIError{Code: 404, Body: `{"kind":"Status","details":{"name":"creds","kind":"secrets"}}`}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a 404 answer", secretGone, true},
		{"a wrapped 404 answer", fmt.Errorf("reading: %w", secretGone), true},
		{"another status", &APIError{Code: 403, Body: "forbidden"}, false},
		{"no answer at all", errors.New("connection refused"), false},
		{"no error", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsNotFound(tt.err))
		})
	}
	assert.True(t, secretGone.ObjectGone("creds"))
	assert.False(t, secretGone.ObjectGone("other"), "a 404 about something else is not this object gone")
}
