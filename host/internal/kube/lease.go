package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
)

// Leases is the lease.Store of the API server's coordination.k8s.io/v1 Leases.
type Leases struct{ c *Client }

// Leases returns the client's lease store.
func (c *Client) Leases() Leases { return Leases{c} }

func leasePath(namespace string, name ...string) []string {
	return append([]string{"/apis/coordination.k8s.io/v1/namespaces", namespace, "leases"}, name...)
}

// Get reads a Lease; lease.ErrNotFound when it does not exist.
func (l Leases) Get(ctx context.Context, namespace, name string) (lease.Record, error) {
	body, err := do(ctx, l.c.rest.Get().AbsPath(leasePath(namespace, name)...))
	if err != nil {
		return lease.Record{}, leaseError(err)
	}
	return decodeLease(body)
}

// Create writes a new Lease; lease.ErrConflict when another replica created it first.
func (l Leases) Create(ctx context.Context, namespace, name string, r lease.Record) (lease.Record, error) {
	obj := encodeLease(namespace, name, r)
	obj.ResourceVersion = ""
	data, err := json.Marshal(obj)
	if err != nil {
		return lease.Record{}, err
	}
	body, err := do(ctx, l.c.rest.Post().AbsPath(leasePath(namespace)...).Body(data))
	if err != nil {
		return lease.Record{}, leaseError(err)
	}
	return decodeLease(body)
}

// Update replaces a Lease at r.ResourceVersion; lease.ErrConflict when it changed since.
func (l Leases) Update(ctx context.Context, namespace, name string, r lease.Record) (lease.Record, error) {
	data, err := json.Marshal(encodeLease(namespace, name, r))
	if err != nil {
		return lease.Record{}, err
	}
	body, err := do(ctx, l.c.rest.Put().AbsPath(leasePath(namespace, name)...).Body(data))
	if err != nil {
		return lease.Record{}, leaseError(err)
	}
	return decodeLease(body)
}

func leaseError(err error) error {
	if ae, ok := kubeapi.AsAPIError(err); ok {
		switch ae.Code {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %v", lease.ErrNotFound, err)
		case http.StatusConflict:
			return fmt.Errorf("%w: %v", lease.ErrConflict, err)
		}
	}
	return err
}

func encodeLease(namespace, name string, r lease.Record) *coordinationv1.Lease {
	seconds := int32(r.Duration / time.Second)
	acquire, renew := metav1.NewMicroTime(r.AcquireTime), metav1.NewMicroTime(r.RenewTime)
	holder, transitions := r.Holder, r.Transitions
	return &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: r.ResourceVersion},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds,
			AcquireTime: &acquire, RenewTime: &renew, LeaseTransitions: &transitions},
	}
}

func decodeLease(body []byte) (lease.Record, error) {
	var l coordinationv1.Lease
	if err := json.Unmarshal(body, &l); err != nil {
		return lease.Record{}, fmt.Errorf("reading a Lease: %w", err)
	}
	r := lease.Record{ResourceVersion: l.ResourceVersion}
	s := l.Spec
	if s.HolderIdentity != nil {
		r.Holder = *s.HolderIdentity
	}
	if s.LeaseDurationSeconds != nil {
		r.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if s.AcquireTime != nil {
		r.AcquireTime = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		r.RenewTime = s.RenewTime.Time
	}
	if s.LeaseTransitions != nil {
		r.Transitions = *s.LeaseTransitions
	}
	return r, nil
}
