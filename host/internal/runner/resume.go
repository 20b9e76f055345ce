package runner

import (
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// A pass can be cut short from outside: the hook's supervisor kills the child process whose guest
// code overran a call's deadline and runs the pass again in its own process
// (host/internal/supervise, docs/contract.md §5). The second pass must not do again what the first
// finished (writes to OpenStack and Kubernetes for CRs already reconciled, prunes already done,
// finalizers already released): the runner tells its Journal about each step as it finishes it,
// and a Runner given those steps (Done) takes their outcomes instead of doing them again. What
// the first pass had not finished, the second does as any pass would.

// StepKind is what a step did.
type StepKind string

// The steps of a pass a Journal hears about, each once its writes are made.
const (
	// StepFinalizer is the finalizer sync of a CR to reconcile (or its refusal for another
	// profile's finalizer, with its status written).
	StepFinalizer StepKind = "finalizer"
	// StepReconcile is a CR reconciled (or failed by its group) with its status written.
	StepReconcile StepKind = "reconcile"
	// StepDelete is a per-CR delete with its status written.
	StepDelete StepKind = "delete"
	// StepPrune is a credential group's prune.
	StepPrune StepKind = "prune"
	// StepRelease is a deleted CR's finalizer released (or refused).
	StepRelease StepKind = "release"
)

// Outcomes of a step.
const (
	OutcomeOK       = "ok"
	OutcomeFailed   = "failed"
	OutcomeTerminal = "terminal"
	// OutcomeHeld is a per-CR delete that keeps the CR's finalizer without failing the run
	// (Progressing, or terminal).
	OutcomeHeld = "held"
)

// Step is one finished piece of a pass.
type Step struct {
	Kind StepKind `json:"kind"`
	// Key names the CR (resource.Resource.Identity) or, for a prune, the credential group
	// (GroupKey).
	Key     string `json:"key"`
	Outcome string `json:"outcome"`
}

// Journal hears about each step of a pass once it is finished. Done is called from the pass's
// goroutines and must be safe for that; it must not block for long.
type Journal interface {
	Done(Step)
}

// GroupKey names a credential group in a Step.
func GroupKey(c plugin.Credentials) string {
	return c.Namespace + "\x00" + c.SecretName + "\x00" + c.CloudName
}

// steps indexes the steps an earlier pass finished.
type steps map[StepKind]map[string]string

func indexSteps(done []Step) steps {
	if len(done) == 0 {
		return nil
	}
	s := steps{}
	for _, d := range done {
		if s[d.Kind] == nil {
			s[d.Kind] = map[string]string{}
		}
		s[d.Kind][d.Key] = d.Outcome
	}
	return s
}

// finished reports the outcome of the step kind for key when an earlier pass did it.
func (rn *Runner) finished(kind StepKind, key string) (string, bool) {
	o, ok := rn.done[kind][key]
	return o, ok
}

// finishedCR is finished for a CR.
func (rn *Runner) finishedCR(kind StepKind, cr *resource.Resource) (string, bool) {
	return rn.finished(kind, cr.Identity())
}

// note tells the journal that a step is finished.
func (rn *Runner) note(kind StepKind, key, outcome string) {
	if rn.Journal != nil {
		rn.Journal.Done(Step{Kind: kind, Key: key, Outcome: outcome})
	}
}

func (rn *Runner) noteCR(kind StepKind, cr *resource.Resource, outcome string) {
	rn.note(kind, cr.Identity(), outcome)
}

// reconcileOutcome names what reconcileOne returned.
func reconcileOutcome(failures, terminal int) string {
	switch {
	case failures > 0:
		return OutcomeFailed
	case terminal > 0:
		return OutcomeTerminal
	}
	return OutcomeOK
}
