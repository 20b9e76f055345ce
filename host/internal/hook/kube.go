package hook

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/openstack-sync/openstack-sync/host/internal/events"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// lazyKube builds the run's one Kubernetes client on first use: a run that needs no API call
// (nothing to patch, statuses disabled) must not fail for want of a kubeconfig.
type lazyKube struct {
	newKube func() (Kube, error)
	once    sync.Once
	client  Kube
	err     error
	// writes counts the calls that may change something (patches, Events): a run that made one
	// is not recorded for a replay.
	writes atomic.Int64
}

func (l *lazyKube) get() (Kube, error) {
	l.once.Do(func() { l.client, l.err = l.newKube() })
	return l.client, l.err
}

func (l *lazyKube) JSONPatch(ctx context.Context, t kubeapi.Target, patch []byte) error {
	l.writes.Add(1)
	c, err := l.get()
	if err != nil {
		return err
	}
	return c.JSONPatch(ctx, t, patch)
}

func (l *lazyKube) MergePatchStatus(ctx context.Context, t kubeapi.Target, patch []byte) error {
	l.writes.Add(1)
	c, err := l.get()
	if err != nil {
		return err
	}
	return c.MergePatchStatus(ctx, t, patch)
}

func (l *lazyKube) Finalizers(ctx context.Context, t kubeapi.Target) ([]string, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.Finalizers(ctx, t)
}

func (l *lazyKube) GetSecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	return c.GetSecretData(ctx, namespace, name)
}

// eventsAPI is the client's Events API, when the client has one (the production client does;
// test doubles may not, and then no Event is recorded).
func (l *lazyKube) eventsAPI() (events.API, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	api, ok := c.(events.API)
	if !ok {
		return nil, errNoEvents
	}
	return api, nil
}

var errNoEvents = errors.New("this Kubernetes client records no Events")

func (l *lazyKube) CreateEvent(ctx context.Context, namespace string, body []byte) error {
	l.writes.Add(1)
	api, err := l.eventsAPI()
	if err != nil {
		return err
	}
	return api.CreateEvent(ctx, namespace, body)
}

func (l *lazyKube) GetEvent(ctx context.Context, namespace, name string) ([]byte, error) {
	api, err := l.eventsAPI()
	if err != nil {
		return nil, err
	}
	return api.GetEvent(ctx, namespace, name)
}

func (l *lazyKube) UpdateEvent(ctx context.Context, namespace, name string, body []byte) error {
	l.writes.Add(1)
	api, err := l.eventsAPI()
	if err != nil {
		return err
	}
	return api.UpdateEvent(ctx, namespace, name, body)
}
