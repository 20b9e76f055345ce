package hookenv

import (
	"math"
	"strconv"
	"strings"
)

// The host's own Kubernetes request limit when the operator sets none: high enough that a pass
// writing a few thousand CRs is not held to client-go's 5 per second, low enough that one hook
// run cannot take an API server without priority and fairness by surprise.
const (
	DefaultKubeQPS   = 50
	DefaultKubeBurst = 100
)

// KubeLimit is the client-side limit on the host's Kubernetes API requests in one run:
// OPENSTACK_SYNC_KUBE_QPS requests per second (0: none, the API server's priority and fairness
// alone decides) with bursts of OPENSTACK_SYNC_KUBE_BURST.
type KubeLimit struct {
	QPS   float64
	Burst int
}

// LoadKubeLimit reads OPENSTACK_SYNC_KUBE_QPS and OPENSTACK_SYNC_KUBE_BURST.
func LoadKubeLimit(lookup LookupFunc) (KubeLimit, error) {
	const qpsName, burstName = "OPENSTACK_SYNC_KUBE_QPS", "OPENSTACK_SYNC_KUBE_BURST"
	l := KubeLimit{QPS: DefaultKubeQPS, Burst: DefaultKubeBurst}
	if v, ok := lookup(qpsName); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		// client-go holds the rate as a float32; anything it cannot hold is a typo, not a wish.
		if err != nil || math.IsNaN(f) || f < 0 || f > math.MaxFloat32 {
			return KubeLimit{}, errorf(qpsName, "must be a number of requests per second, 0 or more (0: no client-side limit)")
		}
		l.QPS = f
	}
	burst, err := Int(lookup, burstName, DefaultKubeBurst)
	if err != nil {
		return KubeLimit{}, err
	}
	if burst < 1 {
		return KubeLimit{}, errorf(burstName, "must be at least 1")
	}
	l.Burst = burst
	return l, nil
}
