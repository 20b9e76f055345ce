package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// crLister lists custom resources; the production client is one. Test doubles that are not are
// refused only by a configuration that asks for the check.
type crLister interface {
	ListCRNames(ctx context.Context, t kubeapi.Target, limit int) ([]string, error)
}

func (l *lazyKube) ListCRNames(ctx context.Context, t kubeapi.Target, limit int) ([]string, error) {
	c, err := l.get()
	if err != nil {
		return nil, err
	}
	cl, ok := c.(crLister)
	if !ok {
		return nil, errors.New("this Kubernetes client cannot list custom resources")
	}
	return cl.ListCRNames(ctx, t, limit)
}

// MsgBothProfiles is the line of a run that refuses to act because CRs of its kind exist under
// both profiles' CRDs (docs/migrating.md).
const MsgBothProfiles = "Not acting: CRs of this kind exist under both profiles' CRDs"

// otherProfileCRs reports whether the run must stop because the other profile's CRD holds CRs of
// the same kind in the hook's reach (docs/contract.md §11): a site half moved between the
// original's names and this project's, or set to the wrong profile. Either operator acting then
// could prune what the other's CRs claim, or leave CRs no operator releases. A CRD the API server
// does not serve holds none.
func otherProfileCRs(ctx context.Context, kube crLister, cfg hookenv.Config, log *slog.Logger) bool {
	group, version, plural, ok := cfg.Other()
	if !ok {
		return false
	}
	names, err := kube.ListCRNames(ctx, kubeapi.Target{Group: group, Version: version, Plural: plural, Namespace: cfg.PodNamespace}, 1)
	if ae, isAPI := kubeapi.AsAPIError(err); isAPI && ae.Code == http.StatusNotFound {
		return false
	}
	if err != nil {
		log.Error(MsgBothProfiles, "kind", cfg.Kind, "other", plural+"."+group,
			"error", fmt.Sprintf("cannot tell whether %s.%s holds CRs (the chart's RBAC grants list on it): %v", plural, group, err))
		return true
	}
	if len(names) == 0 {
		return false
	}
	log.Error(MsgBothProfiles, "kind", cfg.Kind, "other", plural+"."+group, "example", names[0],
		"error", fmt.Sprintf("this hook reconciles %s under the %s profile (%s_PROFILE), but %s also holds %s CRs (e.g. %s): "+
			"finish moving them with openstack-sync migrate, or set the profile of the CRs in use (chart: compatibility.profile)",
			cfg.Resource, cfg.Profile, cfg.Prefix, plural+"."+group, cfg.Kind, names[0]))
	return true
}
