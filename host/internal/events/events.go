// Package events records Kubernetes Events (events.k8s.io/v1) about CRs, and makes a repeat of
// the same Event a series on one object, as client-go's event broadcaster does within a process.
//
// A hook is a fresh process per run, so no in-memory cache could notice a repeat. The Event's
// name is instead derived from what makes two Events the same (the CR's UID, reason, action,
// reporting controller and note): the first occurrence creates it; a later one finds the name
// taken, reads the Event back and counts one more in its series (series.count, starting at 2,
// and series.lastObservedTime). The note is part of the identity because events.k8s.io/v1
// forbids changing it on update. The API server's event TTL (one hour by default) ends a series.
//
// Recording is best effort: an Event that cannot be written is logged and never changes a run's
// outcome.
package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// API is what the recorder asks of the Kubernetes API: raw events.k8s.io/v1 Event objects in a
// namespace. A refusal is a *kubeapi.APIError (409 when the name is taken or the object changed).
type API interface {
	CreateEvent(ctx context.Context, namespace string, body []byte) error
	GetEvent(ctx context.Context, namespace, name string) ([]byte, error)
	UpdateEvent(ctx context.Context, namespace, name string, body []byte) error
}

// Recorder writes Events for one reporting controller and instance.
type Recorder struct {
	API API
	// Controller is reportingController, e.g. "openstack-sync.io/ironic-runbooks".
	Controller string
	// Instance is reportingInstance: the pod (HOSTNAME) the hook runs in.
	Instance string
	Log      *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Field limits of events.k8s.io/v1.
const (
	maxNote     = 1024
	maxName     = 253
	maxWordLen  = 128
	attemptsMax = 3
)

// Name is the Event's object name: the CR's name and a digest of what makes the Event the same.
func (r *Recorder) Name(ev kubeapi.Event) string {
	sum := sha256.Sum256([]byte(ev.Regarding.UID + "\x00" + ev.Regarding.Name + "\x00" + ev.Reason + "\x00" +
		ev.Action + "\x00" + r.Controller + "\x00" + note(ev.Note)))
	prefix := ev.Regarding.Name
	if limit := maxName - 17; len(prefix) > limit {
		prefix = prefix[:limit]
	}
	return prefix + "." + hex.EncodeToString(sum[:8])
}

// note bounds the text to what the API server accepts, keeping it valid UTF-8.
func note(s string) string {
	if len(s) <= maxNote {
		return s
	}
	cut := maxNote - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func word(s string) string {
	if len(s) > maxWordLen {
		return s[:maxWordLen]
	}
	return s
}

// microTime is the API server's MicroTime format.
const microTime = "2006-01-02T15:04:05.000000Z07:00"

func (r *Recorder) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// Record writes ev, or counts one more in its series when it was written before.
func (r *Recorder) Record(ctx context.Context, ev kubeapi.Event) {
	if r == nil || r.API == nil {
		return
	}
	if err := r.record(ctx, ev); err != nil {
		r.Log.Warn("could not record a Kubernetes Event", "cr", ev.Regarding.Namespace+"/"+ev.Regarding.Name,
			"reason", ev.Reason, "error", err.Error())
	}
}

func (r *Recorder) record(ctx context.Context, ev kubeapi.Event) error {
	ns, name := ev.Regarding.Namespace, r.Name(ev)
	now := r.now().Format(microTime)
	body, err := json.Marshal(map[string]any{
		"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":  map[string]any{"name": name, "namespace": ns},
		"eventTime": now,
		"regarding": map[string]any{"apiVersion": ev.Regarding.APIVersion, "kind": ev.Regarding.Kind,
			"namespace": ns, "name": ev.Regarding.Name, "uid": ev.Regarding.UID},
		"type": ev.Type, "reason": word(ev.Reason), "action": word(ev.Action), "note": note(ev.Note),
		"reportingController": r.Controller, "reportingInstance": word(r.Instance),
	})
	if err != nil {
		return err
	}
	err = r.API.CreateEvent(ctx, ns, body)
	if ae, ok := kubeapi.AsAPIError(err); !ok || ae.Code != 409 {
		return err
	}
	// The same Event happened before: one more in its series. A conflict means another writer
	// counted at the same moment; read again and count on top of theirs.
	for range attemptsMax {
		old, err := r.API.GetEvent(ctx, ns, name)
		if err != nil {
			return err
		}
		next, err := repeat(old, now)
		if err != nil {
			return err
		}
		err = r.API.UpdateEvent(ctx, ns, name, next)
		if ae, ok := kubeapi.AsAPIError(err); !ok || ae.Code != 409 {
			return err
		}
	}
	return fmt.Errorf("event %s/%s kept changing while being counted", ns, name)
}

// repeat counts one more occurrence in an Event's series, the way client-go's broadcaster does:
// a first repeat starts the series at 2.
func repeat(old []byte, now string) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(old, &obj); err != nil {
		return nil, fmt.Errorf("reading the event: %w", err)
	}
	count := int64(1)
	if s, ok := obj["series"].(map[string]any); ok {
		if c, ok := s["count"].(float64); ok && c >= 1 {
			count = int64(c)
		}
	}
	obj["series"] = map[string]any{"count": count + 1, "lastObservedTime": now}
	return json.Marshal(obj)
}
