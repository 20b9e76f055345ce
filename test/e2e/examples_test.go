//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is one reconciled CRD.
type kind struct {
	kind string
	gvr  schema.GroupVersionResource
}

var (
	runbooks      = kind{"IronicRunbook", schema.GroupVersionResource{Group: "ironic.openstack-sync.io", Version: "v1alpha1", Resource: "ironicrunbooks"}}
	routerFlavors = kind{"NeutronRouterFlavor", schema.GroupVersionResource{Group: "neutron.openstack-sync.io", Version: "v1alpha1", Resource: "neutronrouterflavors"}}
	segmentRanges = kind{"NeutronSegmentRange", schema.GroupVersionResource{Group: "neutron.openstack-sync.io", Version: "v1alpha1", Resource: "neutronsegmentranges"}}
	kinds         = []kind{runbooks, routerFlavors, segmentRanges}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

const finalizer = "openstack-sync.io/finalizer"

// examples is what examples/ offers an operator: a credentials Secret and one CR per plugin.
type examples struct {
	secret *unstructured.Unstructured
	crs    map[string]*unstructured.Unstructured // by kind
	// clouds are the cloud names the CRs pick from the Secret.
	clouds []string
}

func loadExamples(dir string) (*examples, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	ex := &examples{crs: map[string]*unstructured.Unstructured{}}
	cloudSet := map[string]bool{}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs, err := yamlDocs(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, d := range docs {
			u := &unstructured.Unstructured{Object: d}
			switch u.GetKind() {
			case "Secret":
				if ex.secret == nil {
					ex.secret = u
				}
			case runbooks.kind, routerFlavors.kind, segmentRanges.kind:
				if ex.crs[u.GetKind()] == nil {
					ex.crs[u.GetKind()] = u
					c, _, _ := unstructured.NestedString(d, "spec", "cloudCredentialsRef", "cloudName")
					cloudSet[c] = true
				}
			}
		}
	}
	if ex.secret == nil {
		return nil, fmt.Errorf("%s holds no credentials Secret", dir)
	}
	for _, k := range kinds {
		if ex.crs[k.kind] == nil {
			return nil, fmt.Errorf("%s holds no %s", dir, k.kind)
		}
	}
	for c := range cloudSet {
		if c == "" {
			return nil, fmt.Errorf("an example CR in %s has no spec.cloudCredentialsRef.cloudName", dir)
		}
		ex.clouds = append(ex.clouds, c)
	}
	sort.Strings(ex.clouds)
	return ex, nil
}
