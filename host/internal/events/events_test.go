package events

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// memAPI keeps Events as the API server does: a taken name is 409 on create, and an update must
// carry the resourceVersion it read.
type memAPI struct {
	objs     map[string]map[string]any
	conflict int // the next updates that lose a race
	creates  int
}

func (m *memAPI) CreateEvent(_ context.Context, ns string, body []byte) error {
	m.creates++
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return err
	}
	name := obj["metadata"].(map[string]any)["name"].(string)
	if _, ok := m.objs[ns+"/"+name]; ok {
		return &kubeapi.APIError{Code: 409, Body: "already exists"}
	}
	obj["metadata"].(map[string]any)["resourceVersion"] = "1"
	m.objs[ns+"/"+name] = obj
	return nil
}

func (m *memAPI) GetEvent(_ context.Context, ns, name string) ([]byte, error) {
	obj, ok := m.objs[ns+"/"+name]
	if !ok {
		return nil, &kubeapi.APIError{Code: 404}
	}
	return json.Marshal(obj)
}

func (m *memAPI) UpdateEvent(_ context.Context, ns, name string, body []byte) error {
	if m.conflict > 0 {
		m.conflict--
		return &kubeapi.APIError{Code: 409, Body: "the object has been modified"}
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return err
	}
	m.objs[ns+"/"+name] = obj
	return nil
}

var cr = kubeapi.ObjectRef{APIVersion: "example.org/v1", Kind: "Thing", Namespace: "ns1", Name: "a", UID: "u1"}

func newRecorder(api API, logs *bytes.Buffer) *Recorder {
	return &Recorder{API: api, Controller: "openstack-sync.io/things", Instance: "pod-1",
		Log: slog.New(slog.NewTextHandler(logs, nil)), Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
}

func TestRepeatsBecomeASeries(t *testing.T) {
	api := &memAPI{objs: map[string]map[string]any{}}
	var logs bytes.Buffer
	r := newRecorder(api, &logs)
	failed := kubeapi.Event{Regarding: cr, Type: kubeapi.EventWarning, Reason: "ReconcileFailed", Action: "Reconcile", Note: "boom"}
	other := failed
	other.Note = "another failure"

	tests := []struct {
		ev         kubeapi.Event
		wantEvents int
		wantCount  any // series.count of ev's Event; nil: no series yet
	}{
		{failed, 1, nil},
		{failed, 1, 2.0},
		{other, 2, nil},
		{failed, 2, 3.0},
	}
	for i, tc := range tests {
		r.Record(context.Background(), tc.ev)
		require.Len(t, api.objs, tc.wantEvents, "step %d", i)
		obj := api.objs["ns1/"+r.Name(tc.ev)]
		require.NotNil(t, obj, "step %d", i)
		var count any
		if s, ok := obj["series"].(map[string]any); ok {
			count = s["count"]
			assert.Equal(t, "2026-01-02T03:04:05.000000Z", s["lastObservedTime"])
		}
		assert.Equal(t, tc.wantCount, count, "step %d", i)
	}
	obj := api.objs["ns1/"+r.Name(failed)]
	assert.Equal(t, "Warning", obj["type"])
	assert.Equal(t, "ReconcileFailed", obj["reason"])
	assert.Equal(t, "boom", obj["note"])
	assert.Equal(t, "openstack-sync.io/things", obj["reportingController"])
	assert.Equal(t, map[string]any{"apiVersion": "example.org/v1", "kind": "Thing", "namespace": "ns1", "name": "a", "uid": "u1"}, obj["regarding"])
	assert.Empty(t, logs.String())
}

func TestConflictsAreRetriedAndFailuresOnlyLogged(t *testing.T) {
	api := &memAPI{objs: map[string]map[string]any{}}
	var logs bytes.Buffer
	r := newRecorder(api, &logs)
	ev := kubeapi.Event{Regarding: cr, Type: kubeapi.EventNormal, Reason: "Recovered", Action: "Reconcile", Note: "ok"}
	r.Record(context.Background(), ev)
	api.conflict = 1
	r.Record(context.Background(), ev)
	assert.Equal(t, 2.0, api.objs["ns1/"+r.Name(ev)]["series"].(map[string]any)["count"])

	api.conflict = attemptsMax
	r.Record(context.Background(), ev)
	assert.Contains(t, logs.String(), "could not record a Kubernetes Event")
	assert.Contains(t, logs.String(), "kept changing while being counted")
}

func TestNamesAndNotesFitTheAPI(t *testing.T) {
	r := &Recorder{Controller: "c"}
	long := cr
	long.Name = strings.Repeat("n", 253)
	ev := kubeapi.Event{Regarding: long, Reason: "R", Action: "A", Note: strings.Repeat("é", 1000)}
	name := r.Name(ev)
	assert.LessOrEqual(t, len(name), maxName)
	assert.NotEqual(t, name, r.Name(kubeapi.Event{Regarding: long, Reason: "R2", Action: "A"}))
	n := note(ev.Note)
	assert.LessOrEqual(t, len(n), maxNote)
	assert.True(t, strings.HasSuffix(n, "..."))
	assert.True(t, json.Valid([]byte(`"`+n+`"`)))
	var nilRecorder *Recorder
	nilRecorder.Record(context.Background(), ev) // records nothing, does not panic
}
