package lifecycle_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

var (
	active   = widget{ID: "w1", Name: "web", Description: "d", State: "ACTIVE"}
	twin     = widget{ID: "w2", Name: "web", Description: "d", State: "ACTIVE"}
	building = widget{ID: "w3", Name: "db", State: "BUILD"}
)

func TestReconcile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cloud   *cloud
		setup   func(*cloud)
		cr      cr
		kind    lifecycle.Kind
		reason  string
		id      string
		avail   lifecycle.ConditionStatus
		journal []string
		message string
		requeue time.Duration
		// left is the widget ids OpenStack holds afterwards.
		left []string
	}{{
		name: "a new managed CR adopts nothing, then creates once", cloud: newCloud(), cr: managedCR("web", ""),
		kind: lifecycle.KindDone, reason: "Success", id: "new-1", avail: "True",
		journal: []string{"list-adopt web", "create web"}, left: []string{"new-1"},
	}, {
		name: "a lost status write: the widget is adopted, not created again", cloud: newCloud(active), cr: managedCR("web", ""),
		kind: lifecycle.KindDone, id: "w1", avail: "True",
		journal: []string{"list-adopt web"}, left: []string{"w1"},
	}, {
		name: "two widgets match: terminal, nothing created", cloud: newCloud(active, twin), cr: managedCR("web", ""),
		kind: lifecycle.KindTerminal, reason: "UnrecoverableError", avail: "False", message: "2 widgets match this CR (w1, w2)",
		journal: []string{"list-adopt web"}, left: []string{"w1", "w2"},
	}, {
		name: "status.id binds: no listing, no create", cloud: newCloud(active, twin), cr: managedCR("web", "w2"),
		kind: lifecycle.KindDone, id: "w2", avail: "True", journal: []string{"get w2"}, left: []string{"w1", "w2"},
	}, {
		name: "a managed widget deleted outside OpenStack is created again", cloud: newCloud(), cr: managedCR("web", "gone"),
		kind: lifecycle.KindDone, id: "new-1", avail: "True",
		journal: []string{"get gone", "list-adopt web", "create web"}, left: []string{"new-1"},
	}, {
		name: "an unmanaged widget deleted outside OpenStack is reported", cloud: newCloud(), cr: importCR("w1", nil, "w1"),
		kind: lifecycle.KindTerminal, reason: "UnrecoverableError", id: "w1", avail: "False", message: "widget w1 (status.id) no longer exists",
		journal: []string{"get w1"},
	}, {
		name: "import by id never writes", cloud: newCloud(active), cr: importCR("w1", nil, ""),
		setup: func(c *cloud) { c.reconcilers = []lifecycle.Progress{lifecycle.Done()} },
		kind:  lifecycle.KindDone, id: "w1", avail: "True", journal: []string{"get w1"}, left: []string{"w1"},
	}, {
		name: "import by a missing id is terminal", cloud: newCloud(), cr: importCR("w9", nil, ""),
		kind: lifecycle.KindTerminal, reason: "UnrecoverableError", avail: "False", message: "spec.import.id: widget w9 does not exist",
		journal: []string{"get w9"},
	}, {
		name: "import by filter matching nothing waits", cloud: newCloud(), cr: importCR("", &widgetFilter{Name: "web"}, ""),
		kind: lifecycle.KindProgressing, reason: "Progressing", avail: "False", message: "waiting for a widget matching spec.import.filter",
		journal: []string{"list-import web"},
	}, {
		name: "import by filter matching one binds it", cloud: newCloud(active, building), cr: importCR("", &widgetFilter{Name: "web"}, ""),
		kind: lifecycle.KindDone, id: "w1", avail: "True", journal: []string{"list-import web"}, left: []string{"w1", "w3"},
	}, {
		name: "import by filter matching several is terminal", cloud: newCloud(active, twin), cr: importCR("", &widgetFilter{Name: "web"}, ""),
		kind: lifecycle.KindTerminal, reason: "InvalidConfiguration", avail: "False", message: "spec.import.filter matches 2 widgets (w1, w2)",
		journal: []string{"list-import web"}, left: []string{"w1", "w2"},
	}, {
		name: "unmanaged without an import is terminal before any call", cloud: newCloud(active),
		cr:   cr{&lifecycle.Fields[widgetSpec, widgetFilter]{Spec: lifecycle.Spec[widgetSpec, widgetFilter]{ManagementPolicy: lifecycle.Unmanaged}}},
		kind: lifecycle.KindTerminal, reason: "InvalidConfiguration", avail: "False", message: "unmanaged needs spec.import", left: []string{"w1"},
	}, {
		name: "a failed create is transient and records no id", cloud: newCloud(), cr: managedCR("web", ""),
		setup: func(c *cloud) { c.failCreate = errUnavailable },
		kind:  lifecycle.KindTransient, reason: "TransientError", avail: "False", message: "503",
		journal: []string{"list-adopt web", "create web"},
	}, {
		name: "a create that must wait is progressing", cloud: newCloud(), cr: managedCR("web", ""),
		setup: func(c *cloud) { c.createWaits = true },
		kind:  lifecycle.KindProgressing, avail: "False", message: "waiting for a quota", requeue: 30 * time.Second,
		journal: []string{"list-adopt web", "create web"},
	}, {
		name: "a create returning neither resource nor reason is an error, not success", cloud: newCloud(), cr: managedCR("web", ""),
		setup: func(c *cloud) { c.createsNothing = true },
		kind:  lifecycle.KindTransient, avail: "False", message: "neither a resource nor a reason",
		journal: []string{"list-adopt web", "create web"},
	}, {
		name: "adoption that cannot list never creates", cloud: newCloud(), cr: managedCR("web", ""),
		setup: func(c *cloud) { c.failList = errUnavailable },
		kind:  lifecycle.KindTransient, avail: "False", message: "listing widgets for adoption: 503",
		journal: []string{"list-adopt web"},
	}, {
		name: "a failed get keeps status.id", cloud: newCloud(active), cr: managedCR("web", "w1"),
		setup: func(c *cloud) { c.failGet = errUnavailable },
		kind:  lifecycle.KindTransient, id: "w1", avail: "Unknown", journal: []string{"get w1"}, left: []string{"w1"},
	}, {
		name: "every reconciler runs after failures; results aggregate", cloud: newCloud(active), cr: managedCR("web", "w1"),
		setup: func(c *cloud) {
			c.reconcilers = []lifecycle.Progress{
				lifecycle.Transient(errUnavailable),
				lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, assert.AnError),
				lifecycle.Progressing("waiting for a port", 20*time.Second),
				lifecycle.Progressing("waiting for a subnet", 10*time.Second),
			}
		},
		kind: lifecycle.KindTransient, reason: "TransientError", id: "w1", avail: "True", requeue: 10 * time.Second,
		message: "503 Service Unavailable; " + assert.AnError.Error(),
		journal: []string{"get w1", "reconciler 0 w1", "reconciler 1 w1", "reconciler 2 w1", "reconciler 3 w1"}, left: []string{"w1"},
	}, {
		name: "reconcilers run even when listing them partly failed", cloud: newCloud(active), cr: managedCR("web", "w1"),
		setup: func(c *cloud) {
			c.reconcilers = []lifecycle.Progress{lifecycle.Done()}
			c.recsErr = lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, assert.AnError)
		},
		kind: lifecycle.KindTerminal, reason: "InvalidConfiguration", id: "w1", avail: "True",
		journal: []string{"get w1", "reconciler 0 w1"}, left: []string{"w1"},
	}, {
		name: "a widget still building is progressing, with its id recorded", cloud: newCloud(), cr: managedCR("web", ""),
		setup: func(c *cloud) { c.newState = "BUILD" },
		kind:  lifecycle.KindProgressing, reason: "Progressing", id: "new-1", avail: "False", requeue: 5 * time.Second,
		message: "waiting for the widget to be ACTIVE", journal: []string{"list-adopt web", "create web"}, left: []string{"new-1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(tc.cloud)
			}
			out := driver(tc.cloud).Reconcile(context.Background(), tc.cr)
			assert.Equal(t, tc.kind, out.Progress.Kind(), "kind; message %q", out.Progress.Message())
			if tc.reason != "" {
				assert.Equal(t, tc.reason, out.Progress.Reason())
			}
			assert.Equal(t, tc.id, out.ID, "status.id")
			assert.Equal(t, tc.avail, out.Available)
			assert.Equal(t, tc.journal, tc.cloud.journal)
			assert.Contains(t, out.Progress.Message(), tc.message)
			assert.Equal(t, tc.requeue, out.Progress.Requeue())
			assert.ElementsMatch(t, tc.left, keys(tc.cloud))
			if out.ID != "" && out.Progress.Kind() != lifecycle.KindTransient && out.Progress.Kind() != lifecycle.KindTerminal {
				assert.NotNil(t, out.Resource, "status.resource is reported with the resource")
			}
		})
	}
}

// TestLostStatusWriteNeverDuplicates runs the create, loses the status write, and runs again.
func TestLostStatusWriteNeverDuplicates(t *testing.T) {
	c := newCloud()
	d := driver(c)
	first := d.Reconcile(context.Background(), managedCR("web", ""))
	require.Equal(t, "new-1", first.ID)
	// The status write failed: the next run still sees no status.id.
	for range 3 {
		again := d.Reconcile(context.Background(), managedCR("web", ""))
		require.Equal(t, "new-1", again.ID)
	}
	assert.Len(t, c.items, 1)
	assert.Equal(t, 1, count(c.journal, "create web"), "create runs at most once")
	// And a delete without status.id still finds it.
	out := d.Delete(context.Background(), managedCR("web", ""))
	assert.True(t, out.Progress.IsDone())
	assert.Empty(t, c.items)
}

func TestDelete(t *testing.T) {
	detach := managedCR("web", "w1")
	detach.fields.Spec.ManagedOptions = &lifecycle.ManagedOptions{OnDelete: lifecycle.OnDeleteDetach}
	for _, tc := range []struct {
		name    string
		cloud   *cloud
		setup   func(*cloud)
		cr      cr
		kind    lifecycle.Kind
		journal []string
		left    []string
		message string
	}{{
		name: "by status.id, confirmed by a get", cloud: newCloud(active, twin), cr: managedCR("web", "w2"),
		kind: lifecycle.KindDone, journal: []string{"get w2", "delete w2", "get w2"}, left: []string{"w1"},
	}, {
		name: "without status.id the CR adopts before deleting", cloud: newCloud(active, building), cr: managedCR("web", ""),
		kind: lifecycle.KindDone, journal: []string{"list-adopt web", "delete w1", "get w1"}, left: []string{"w3"},
	}, {
		name: "without status.id and nothing to adopt, nothing is deleted", cloud: newCloud(building), cr: managedCR("web", ""),
		kind: lifecycle.KindDone, journal: []string{"list-adopt web"}, left: []string{"w3"},
	}, {
		name: "several adoption matches delete nothing", cloud: newCloud(active, twin), cr: managedCR("web", ""),
		kind: lifecycle.KindTerminal, journal: []string{"list-adopt web"}, left: []string{"w1", "w2"}, message: "2 widgets match",
	}, {
		name: "already gone is done without a delete", cloud: newCloud(), cr: managedCR("web", "w1"),
		kind: lifecycle.KindDone, journal: []string{"get w1"},
	}, {
		name: "unmanaged never deletes", cloud: newCloud(active), cr: importCR("w1", nil, "w1"),
		kind: lifecycle.KindDone, left: []string{"w1"},
	}, {
		name: "onDelete detach leaves the widget", cloud: newCloud(active), cr: detach,
		kind: lifecycle.KindDone, left: []string{"w1"},
	}, {
		name: "an asynchronous delete is progressing until a get says not found", cloud: newCloud(active), cr: managedCR("web", "w1"),
		setup: func(c *cloud) { c.slowDelete = true },
		kind:  lifecycle.KindProgressing, journal: []string{"get w1", "delete w1", "get w1"}, message: "waiting for widget w1 to be deleted",
	}, {
		name: "a failed delete keeps the widget and the finalizer", cloud: newCloud(active), cr: managedCR("web", "w1"),
		setup: func(c *cloud) { c.failDelete = errUnavailable },
		kind:  lifecycle.KindTransient, journal: []string{"get w1", "delete w1"}, left: []string{"w1"}, message: "503",
	}, {
		name: "a get that fails is not taken as gone", cloud: newCloud(active), cr: managedCR("web", "w1"),
		setup: func(c *cloud) { c.failGet = errUnavailable },
		kind:  lifecycle.KindTransient, journal: []string{"get w1"}, left: []string{"w1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(tc.cloud)
			}
			out := driver(tc.cloud).Delete(context.Background(), tc.cr)
			assert.Equal(t, tc.kind, out.Progress.Kind(), "kind; message %q", out.Progress.Message())
			assert.Equal(t, tc.journal, tc.cloud.journal)
			assert.ElementsMatch(t, tc.left, keys(tc.cloud))
			assert.Contains(t, out.Progress.Message(), tc.message)
		})
	}
}

func TestAsynchronousDeleteCompletesOnTheNextRun(t *testing.T) {
	c := newCloud(active)
	c.slowDelete = true
	d := driver(c)
	require.Equal(t, lifecycle.KindProgressing, d.Delete(context.Background(), managedCR("web", "w1")).Progress.Kind())
	// The second get (above) saw it DELETING and the fake dropped it: the next run confirms.
	out := d.Delete(context.Background(), managedCR("web", "w1"))
	assert.True(t, out.Progress.IsDone())
	assert.Equal(t, 1, count(c.journal, "delete w1"), "a confirmed-gone resource is not deleted again")
}

func keys(c *cloud) []string {
	var out []string
	for id := range c.items {
		out = append(out, id)
	}
	return out
}

func count(journal []string, entry string) int {
	n := 0
	for _, j := range journal {
		if j == entry {
			n++
		}
	}
	return n
}

// wordedActuator words its own adoption conflicts.
type wordedActuator struct{ actuator }

func (wordedActuator) AdoptionConflict(matches []*widget) error {
	return fmt.Errorf("%d widgets share the name %q", len(matches), matches[0].Name)
}

type wordedFactory struct{ factory }

func (f wordedFactory) NewCreateActuator(context.Context, cr) (lifecycle.CreateActuator[cr, widgetFilter, widget], lifecycle.Progress) {
	return wordedActuator{actuator(f.factory)}, lifecycle.Done()
}

func TestAdoptionConflictWordedByTheActuator(t *testing.T) {
	c := newCloud(active, twin)
	d := &lifecycle.Driver[cr, widgetSpec, widgetFilter, widget]{Factory: wordedFactory{factory{c}}, Status: statusWriter{}, Noun: "widget"}
	out := d.Reconcile(context.Background(), managedCR("web", ""))
	assert.Equal(t, lifecycle.KindTerminal, out.Progress.Kind())
	assert.Equal(t, `2 widgets share the name "web"`, out.Progress.Message())
	assert.Equal(t, 0, count(c.journal, "create web"))
}
