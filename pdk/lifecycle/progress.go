package lifecycle

import (
	"errors"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// Condition reasons of the Available and Progressing conditions (docs/operators/status.md), as
// the host accepts them (package abi).
const (
	ReasonSuccess              = abi.ReasonSuccess
	ReasonProgressing          = abi.ReasonProgressing
	ReasonTransientError       = abi.ReasonTransientError
	ReasonInvalidConfiguration = abi.ReasonInvalidConfiguration
	ReasonUnrecoverableError   = abi.ReasonUnrecoverableError
)

// Kind is what a Progress amounts to. An aggregate has exactly one Kind.
type Kind int

const (
	// KindDone: nothing is left to do until the spec or OpenStack changes.
	KindDone Kind = iota
	// KindProgressing: the resource is on its way (e.g. not ACTIVE yet); run again after Requeue.
	KindProgressing
	// KindTransient: an error retrying may fix (the API was unavailable, a conflict).
	KindTransient
	// KindTerminal: an error no retry fixes until the spec changes.
	KindTerminal
)

func (k Kind) String() string {
	switch k {
	case KindDone:
		return "Done"
	case KindProgressing:
		return "Progressing"
	case KindTransient:
		return "TransientError"
	case KindTerminal:
		return "TerminalError"
	}
	return "Kind(?)"
}

// TerminalError is an error that retrying cannot fix until the CR's spec changes. Reason is
// ReasonInvalidConfiguration (the spec asks for something impossible) or ReasonUnrecoverableError
// (OpenStack is in a state the plugin will not repair, e.g. an imported resource was deleted).
type TerminalError struct {
	Reason string
	Err    error
}

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// Permanent lets pdk.IsPermanent recognise a terminal error without this package importing it.
func (e *TerminalError) Permanent() bool { return true }

// Progress is the outcome of one step of a flow, modelled on ORC's ReconcileStatus: the zero value
// is done; Progressing, Transient and Terminal make the other three kinds; With aggregates. An
// aggregate keeps every waiting message and error, the shortest positive requeue, and is terminal
// only when every error in it is terminal: a transient error beside a terminal one still deserves
// the retry that may clear it.
type Progress struct {
	waits []string
	after time.Duration
	errs  []error
}

// Done is the zero Progress.
func Done() Progress { return Progress{} }

// Progressing says the resource is not ready yet: message says what it waits for, after when to
// look again (at least the host's progress schedule; a non-positive value means "at the next
// progress run").
func Progressing(message string, after time.Duration) Progress {
	if after < 0 {
		after = 0
	}
	return Progress{waits: []string{message}, after: after}
}

// Transient wraps an error a retry may fix; a nil err is Done. An err already terminal (a
// *TerminalError in its chain) stays terminal.
func Transient(err error) Progress {
	if err == nil {
		return Progress{}
	}
	return Progress{errs: []error{err}}
}

// Terminal wraps an error no retry fixes until the spec changes; reason is
// ReasonInvalidConfiguration or ReasonUnrecoverableError. A nil err is Done.
func Terminal(reason string, err error) Progress {
	if err == nil {
		return Progress{}
	}
	return Progress{errs: []error{&TerminalError{Reason: reason, Err: err}}}
}

// With aggregates p and others: all messages and errors, the shortest positive requeue.
func (p Progress) With(others ...Progress) Progress {
	out := Progress{waits: append([]string(nil), p.waits...), after: p.after, errs: append([]error(nil), p.errs...)}
	for _, o := range others {
		out.waits = append(out.waits, o.waits...)
		out.errs = append(out.errs, o.errs...)
		if o.after > 0 && (out.after == 0 || o.after < out.after) {
			out.after = o.after
		}
	}
	return out
}

// Kind is the single kind of p: terminal when it holds only terminal errors, transient when it
// holds any other error, progressing when it only waits, else done.
func (p Progress) Kind() Kind {
	switch {
	case len(p.errs) > 0 && p.allTerminal():
		return KindTerminal
	case len(p.errs) > 0:
		return KindTransient
	case len(p.waits) > 0:
		return KindProgressing
	}
	return KindDone
}

// IsDone reports whether p is done.
func (p Progress) IsDone() bool { return p.Kind() == KindDone }

func (p Progress) allTerminal() bool {
	for _, err := range p.errs {
		var t *TerminalError
		if !errors.As(err, &t) {
			return false
		}
	}
	return true
}

// Err joins every error of p; nil when it holds none.
func (p Progress) Err() error { return errors.Join(p.errs...) }

// Requeue is the shortest positive delay any part of p asked for, 0 when none did.
func (p Progress) Requeue() time.Duration { return p.after }

// Reason is the Progressing condition's reason for p: Success, Progressing, TransientError, or the
// first terminal error's reason.
func (p Progress) Reason() string {
	switch p.Kind() {
	case KindTerminal:
		var t *TerminalError
		errors.As(p.errs[0], &t)
		if t.Reason == ReasonUnrecoverableError {
			return ReasonUnrecoverableError
		}
		return ReasonInvalidConfiguration
	case KindTransient:
		return ReasonTransientError
	case KindProgressing:
		return ReasonProgressing
	}
	return ReasonSuccess
}

// Message is a one-line description: the errors when there are any, else what p waits for.
func (p Progress) Message() string {
	if len(p.errs) > 0 {
		msgs := make([]string, 0, len(p.errs))
		for _, err := range p.errs {
			msgs = append(msgs, err.Error())
		}
		return strings.Join(msgs, "; ")
	}
	return strings.Join(p.waits, "; ")
}

// Waiting lists what p waits for, in order.
func (p Progress) Waiting() []string { return append([]string(nil), p.waits...) }
