package runner

import (
	"log/slog"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
)

// outOfTime reports whether the run's time budget is spent, so the left CRs of a group are not
// started. Such CRs keep their status (nothing was learnt about them), count as failed so that no
// prune runs on an incomplete picture, and make the run exit 1: shell-operator then runs the hook
// again with fresh snapshots, after executionMinInterval, and the next run starts where the
// converged CRs make it cheap. The first stop of a run is logged and counted once.
func (rn *Runner) outOfTime(log *slog.Logger, left int) bool {
	if rn.Deadline.IsZero() || time.Now().Before(rn.Deadline) {
		return false
	}
	rn.mu.Lock()
	first := !rn.budgetSpent
	rn.budgetSpent = true
	rn.mu.Unlock()
	if first {
		metrics.Add(rn.Metrics, metrics.RunBudgetExhausted, 1, rn.pluginName())
	}
	log.Error("Stopping the run: its time budget is spent; the CRs left are reconciled by the next run",
		"budget_env", rn.Config.Prefix+"_RUN_BUDGET", "budget", rn.Config.RunBudget.String(), "not_reconciled", left)
	return true
}
