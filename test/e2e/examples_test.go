//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"sigs.k8s.io/yaml"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is one reconciled CRD.
type kind struct {
	kind string
	gvr  schema.GroupVersionResource
}

var (
	// kinds are the CRDs of crds/, every one of them: a plugin added with its CRD is installed,
	// checked for RBAC and run through the examples without a row here.
	kinds = loadKinds("../../crds")
	// The lifecycle scenarios say what they do with these three in particular.
	runbooks      = kindNamed("IronicRunbook")
	routerFlavors = kindNamed("NeutronRouterFlavor")
	segmentRanges = kindNamed("NeutronSegmentRange")
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// loadKinds reads the kind and resource of each CRD in dir (the served version is the first).
func loadKinds(dir string) []kind {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("e2e: no CRD in %s: %v", dir, err))
	}
	sort.Strings(files)
	var out []kind
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var crd struct {
			Spec struct {
				Group    string `json:"group"`
				Names    struct{ Kind, Plural string }
				Versions []struct{ Name string }
			}
		}
		if err := yaml.Unmarshal(body, &crd); err != nil || len(crd.Spec.Versions) == 0 {
			panic(fmt.Sprintf("e2e: %s is not a CRD with a version: %v", f, err))
		}
		out = append(out, kind{crd.Spec.Names.Kind, schema.GroupVersionResource{Group: crd.Spec.Group,
			Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}})
	}
	return out
}

func kindNamed(name string) kind {
	for _, k := range kinds {
		if k.kind == name {
			return k
		}
	}
	panic("e2e: crds/ has no CRD of kind " + name)
}

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
			default:
				if !slices.ContainsFunc(kinds, func(k kind) bool { return k.kind == u.GetKind() }) {
					continue
				}
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
