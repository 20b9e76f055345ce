package plugin

import "fmt"

// CleanupPolicy is the deletion-safety contract of a plugin.
type CleanupPolicy int

const (
	// CleanupNone runs no prune and holds no finalizer.
	CleanupNone CleanupPolicy = iota
	// CleanupBestEffortPrune runs prune but holds no finalizer.
	CleanupBestEffortPrune
	// CleanupFinalizedPrune runs prune and holds the finalizer until the CR's group pruned.
	CleanupFinalizedPrune
)

var policyNames = [...]string{"NONE", "BEST_EFFORT_PRUNE", "FINALIZED_PRUNE"}

func (p CleanupPolicy) String() string {
	if p < 0 || int(p) >= len(policyNames) {
		return fmt.Sprintf("CleanupPolicy(%d)", int(p))
	}
	return policyNames[p]
}

// ParseCleanupPolicy reads the names String returns.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	for i, n := range policyNames {
		if s == n {
			return CleanupPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown cleanup policy %q (want NONE, BEST_EFFORT_PRUNE or FINALIZED_PRUNE)", s)
}

// RunsPrune reports whether the policy calls the plugin's prune step.
func (p CleanupPolicy) RunsPrune() bool {
	return p == CleanupBestEffortPrune || p == CleanupFinalizedPrune
}

// UsesFinalizer reports whether live CRs carry the framework finalizer.
func (p CleanupPolicy) UsesFinalizer() bool { return p == CleanupFinalizedPrune }
