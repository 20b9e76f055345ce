package lifecycle_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

func TestProgressAggregates(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	terminal := lifecycle.Terminal(lifecycle.ReasonUnrecoverableError, errA)
	for _, tc := range []struct {
		name    string
		p       lifecycle.Progress
		kind    lifecycle.Kind
		reason  string
		requeue time.Duration
		message string
	}{
		{"zero value is done", lifecycle.Progress{}, lifecycle.KindDone, "Success", 0, ""},
		{"done with done is done", lifecycle.Done().With(lifecycle.Done()), lifecycle.KindDone, "Success", 0, ""},
		{"nil errors are done", lifecycle.Transient(nil).With(lifecycle.Terminal("x", nil)), lifecycle.KindDone, "Success", 0, ""},
		{"progressing keeps the shortest positive delay",
			lifecycle.Progressing("p1", 30*time.Second).With(lifecycle.Progressing("p2", 0), lifecycle.Progressing("p3", 10*time.Second)),
			lifecycle.KindProgressing, "Progressing", 10 * time.Second, "p1; p2; p3"},
		{"a negative delay is none", lifecycle.Progressing("p", -time.Second), lifecycle.KindProgressing, "Progressing", 0, "p"},
		{"an error outranks waiting", lifecycle.Progressing("p", time.Second).With(lifecycle.Transient(errA)),
			lifecycle.KindTransient, "TransientError", time.Second, "a"},
		{"terminal alone", terminal, lifecycle.KindTerminal, "UnrecoverableError", 0, "a"},
		{"terminal with a transient error is retried", terminal.With(lifecycle.Transient(errB)), lifecycle.KindTransient, "TransientError", 0, "a; b"},
		{"two terminals keep the first reason",
			lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, errA).With(terminal), lifecycle.KindTerminal, "InvalidConfiguration", 0, "a; a"},
		{"an unknown terminal reason reads as invalid configuration", lifecycle.Terminal("Bogus", errA), lifecycle.KindTerminal, "InvalidConfiguration", 0, "a"},
		{"a wrapped terminal error stays terminal", lifecycle.Transient(errors.Join(&lifecycle.TerminalError{Reason: "UnrecoverableError", Err: errA})),
			lifecycle.KindTerminal, "UnrecoverableError", 0, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.kind, tc.p.Kind())
			assert.Equal(t, tc.reason, tc.p.Reason())
			assert.Equal(t, tc.requeue, tc.p.Requeue())
			assert.Equal(t, tc.message, tc.p.Message())
			assert.Equal(t, tc.kind == lifecycle.KindDone, tc.p.IsDone())
		})
	}
}

func TestWithDoesNotAliasItsReceiver(t *testing.T) {
	base := lifecycle.Progressing("base", time.Second)
	a := base.With(lifecycle.Progressing("a", 0))
	b := base.With(lifecycle.Progressing("b", 0))
	assert.Equal(t, []string{"base", "a"}, a.Waiting())
	assert.Equal(t, []string{"base", "b"}, b.Waiting())
	assert.Equal(t, []string{"base"}, base.Waiting())
}

func TestErrJoinsAndUnwraps(t *testing.T) {
	errA := errors.New("a")
	p := lifecycle.Transient(errA).With(lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, errors.New("b")))
	assert.ErrorIs(t, p.Err(), errA)
	var te *lifecycle.TerminalError
	assert.ErrorAs(t, p.Err(), &te)
	assert.NoError(t, lifecycle.Done().Err())
}

// Progresses from several steps aggregate into one: every message and error, the shortest delay.
func ExampleProgress_With() {
	p := lifecycle.Progressing("waiting for the port", 30*time.Second).
		With(lifecycle.Progressing("waiting for the subnet", 10*time.Second), lifecycle.Done())
	fmt.Println(p.Kind(), p.Requeue(), p.Message())

	p = p.With(lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, errors.New("spec.size is negative")))
	fmt.Println(p.Kind(), p.Reason(), p.Message())
	// Output:
	// Progressing 10s waiting for the port; waiting for the subnet
	// TerminalError InvalidConfiguration spec.size is negative
}
