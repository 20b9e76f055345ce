package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

func TestOutcomeResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  lifecycle.Outcome
		want pdk.LifecycleStatus
	}{
		{"done", lifecycle.Outcome{ID: "w1", Resource: map[string]any{"a": 1}, Available: lifecycle.ConditionTrue},
			pdk.LifecycleStatus{ID: "w1", Resource: map[string]any{"a": 1}, Available: "True", Reason: "Success"}},
		{"progressing rounds the delay up to whole seconds",
			lifecycle.Outcome{ID: "w1", Available: lifecycle.ConditionFalse, Progress: lifecycle.Progressing("building", 1500*time.Millisecond)},
			pdk.LifecycleStatus{ID: "w1", Available: "False", Reason: "Progressing", Message: "building", RequeueSeconds: 2}},
		{"terminal keeps the id of a resource that exists",
			lifecycle.Outcome{ID: "w1", Available: lifecycle.ConditionTrue, Progress: lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, errors.New("bad"))},
			pdk.LifecycleStatus{ID: "w1", Available: "True", Reason: "InvalidConfiguration", Message: "bad"}},
		{"a pdk reason names the Ready reason",
			lifecycle.Outcome{Progress: lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, pdk.WithReason("InvalidSpec", errors.New("spec.name is empty")))},
			pdk.LifecycleStatus{Available: "Unknown", Reason: "InvalidConfiguration", Message: "spec.name is empty", ReadyReason: "InvalidSpec"}},
		{"no availability reads as Unknown", lifecycle.Outcome{Progress: lifecycle.Transient(errors.New("503"))},
			pdk.LifecycleStatus{Available: "Unknown", Reason: "TransientError", Message: "503"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.out.Result()
			assert.Equal(t, tc.want, *res.Lifecycle)
			assert.Empty(t, res.Notes)
		})
	}
}
