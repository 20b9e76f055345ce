package runner_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// Readiness waits of one run share one budget: two groups of an unreachable cloud do not hold the
// hook (and its shell-operator queue) twice READY_RETRIES x READY_DELAY (issue 11 item 5).
func TestReadinessWaitsShareOneBudgetPerRun(t *testing.T) {
	e := newEnv(t, false)
	e.cfg.ReadyRetries = 30
	e.cfg.ReadyBudget = 60 * time.Second // the delay is 7 s
	down := make([]error, 40)
	for i := range down {
		down[i] = errors.New("503 from neutron")
	}
	e.plugin.WaitErrs = map[plugin.Credentials][]error{g1: down, g2: down}
	code := e.run(e.plan(cr{name: "a"}, cr{name: "b", secret: "s2"}))
	assert.Equal(t, 1, code)
	var slept time.Duration
	for _, d := range e.sleeps {
		slept += d
	}
	assert.LessOrEqual(t, slept, 60*time.Second, "the delays of both groups together stay within the budget")
	assert.Greater(t, slept, 50*time.Second, "the budget is used, not skipped")
	assert.Contains(t, e.status("b")["message"], "within this run's readiness budget of 1m0s (WIDGET_READY_BUDGET), after 0 attempt(s) for this group")
	assert.Contains(t, e.status("a")["message"], "within this run's readiness budget of 1m0s")
}
