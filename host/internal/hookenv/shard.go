package hookenv

import (
	"fmt"
	"slices"
	"strings"
)

// Shard is the part of a kind's CRs one release of the chart reconciles (docs/scaling.md): the
// CRs matching a label selector, in the listed namespaces. Several releases split one kind by
// choosing disjoint shards. The chart sets OPENSTACK_SYNC_SHARD_* from its shard values.
type Shard struct {
	LabelSelector *LabelSelector
	Namespaces    []string
}

// LabelSelector is a Kubernetes label selector, as shell-operator's binding takes it.
type LabelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
}

// Requirement is one matchExpressions entry.
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// ClaimsBinding is the shard's second watch: every CR of the kind in the release's reach, whatever
// its shard. It never runs the hook; its snapshot tells a prune what the other shards' CRs claim.
func ClaimsBinding(binding string) string { return binding + "-claims" }

// LoadShard reads OPENSTACK_SYNC_SHARD_LABEL_SELECTOR (a label selector as JSON) and
// OPENSTACK_SYNC_SHARD_NAMESPACES (comma-separated); nil when neither is set. Namespaces need a
// cluster-wide hook: with POD_NAMESPACE set the hook sees only its own namespace.
func LoadShard(lookup LookupFunc, podNamespace string) (*Shard, error) {
	const selName, nsName = "OPENSTACK_SYNC_SHARD_LABEL_SELECTOR", "OPENSTACK_SYNC_SHARD_NAMESPACES"
	sel, _ := lookup(selName)
	nss, _ := lookup(nsName)
	sel, nss = strings.TrimSpace(sel), strings.TrimSpace(nss)
	if sel == "" && nss == "" {
		return nil, nil
	}
	s := &Shard{}
	if sel != "" {
		s.LabelSelector = &LabelSelector{}
		if err := decodeStrict(sel, s.LabelSelector); err != nil {
			return nil, errorf(selName, "must be a label selector as JSON ({\"matchLabels\": {...}, \"matchExpressions\": [...]}): %v", err)
		}
		if err := s.LabelSelector.check(); err != nil {
			return nil, errorf(selName, "%v", err)
		}
	}
	if nss != "" {
		if podNamespace != "" {
			return nil, errorf(nsName, "needs a cluster-wide hook (POD_NAMESPACE unset, the chart's rbac.clusterWide): POD_NAMESPACE=%s limits the hook to that namespace", podNamespace)
		}
		for _, n := range strings.Split(nss, ",") {
			n = strings.TrimSpace(n)
			if n == "" || len(n) > 63 || !dnsLabels.MatchString(n) || strings.Contains(n, ".") {
				return nil, errorf(nsName, "holds %q, which is not a namespace name", n)
			}
			s.Namespaces = append(s.Namespaces, n)
		}
		slices.Sort(s.Namespaces)
		s.Namespaces = slices.Compact(s.Namespaces)
	}
	return s, nil
}

func (l *LabelSelector) check() error {
	if len(l.MatchLabels) == 0 && len(l.MatchExpressions) == 0 {
		return fmt.Errorf("selects every CR: give matchLabels or matchExpressions")
	}
	for i, r := range l.MatchExpressions {
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				return fmt.Errorf("matchExpressions[%d] (%s %s) needs values", i, r.Key, r.Operator)
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) != 0 {
				return fmt.Errorf("matchExpressions[%d] (%s %s) takes no values", i, r.Key, r.Operator)
			}
		default:
			return fmt.Errorf("matchExpressions[%d] has operator %q; want In, NotIn, Exists or DoesNotExist", i, r.Operator)
		}
		if r.Key == "" {
			return fmt.Errorf("matchExpressions[%d] has no key", i)
		}
	}
	return nil
}
