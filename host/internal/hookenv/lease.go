package hookenv

import (
	"fmt"
	"regexp"
	"time"
)

// LeaseBinding is the schedule binding that renews (or takes over) the plugin's lease between
// runs, so a holder that is merely idle keeps the lease and a standby notices a dead holder
// without waiting for the next event.
const LeaseBinding = "lease"

// LeaseCrontab fires the lease binding every 15 s; shell-operator's executionMinInterval (30 s)
// spaces the runs it actually starts.
const LeaseCrontab = "*/15 * * * * *"

// DefaultLeaseDuration is how long a holder that stopped renewing keeps the lease: three lease
// runs, so one slow or merged run never hands the lease over.
const DefaultLeaseDuration = 90 * time.Second

// MinLeaseDuration leaves one executionMinInterval (30 s) plus a margin between two renewals of
// an idle holder.
const MinLeaseDuration = 40 * time.Second

// Lease is the high-availability configuration: the coordination.k8s.io Lease of one plugin and
// who this replica is. The chart sets OPENSTACK_SYNC_LEASE_* when it runs more than one replica.
type Lease struct {
	Namespace, Name string
	// Holder identifies the pod, so every hook run of one pod is one holder.
	Holder   string
	Duration time.Duration
}

var dnsLabels = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// LoadLease reads OPENSTACK_SYNC_LEASE_NAME (the prefix of every plugin's lease name; unset or
// empty: no lease), _NAMESPACE, _HOLDER and _DURATION (seconds). The lease is named
// <prefix>-<binding>, one per plugin.
func LoadLease(lookup LookupFunc, bindingName string) (*Lease, error) {
	prefix, _ := lookup("OPENSTACK_SYNC_LEASE_NAME")
	if prefix == "" {
		return nil, nil
	}
	l := &Lease{Name: prefix + "-" + bindingName}
	if len(l.Name) > 253 || !dnsLabels.MatchString(l.Name) {
		return nil, errorf("OPENSTACK_SYNC_LEASE_NAME", "gives the lease name %q, which is not a lower-case DNS subdomain of at most 253 characters", l.Name)
	}
	var err error
	if l.Namespace, err = Required(lookup, "OPENSTACK_SYNC_LEASE_NAMESPACE"); err != nil {
		return nil, err
	}
	if l.Holder, err = Required(lookup, "OPENSTACK_SYNC_LEASE_HOLDER"); err != nil {
		return nil, err
	}
	if l.Duration, err = Seconds(lookup, "OPENSTACK_SYNC_LEASE_DURATION", DefaultLeaseDuration); err != nil {
		return nil, err
	}
	if l.Duration < MinLeaseDuration || l.Duration%time.Second != 0 {
		return nil, errorf("OPENSTACK_SYNC_LEASE_DURATION", "must be whole seconds, at least %d: an idle holder renews only every executionMinInterval (30 s)", int(MinLeaseDuration/time.Second))
	}
	return l, nil
}

// String names the lease in log lines.
func (l *Lease) String() string { return fmt.Sprintf("%s/%s", l.Namespace, l.Name) }
