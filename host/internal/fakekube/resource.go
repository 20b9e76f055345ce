package fakekube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Resource is one kind of object the fake API serves: a CRD's storage version or a core type.
type Resource struct {
	Group   string
	Version string
	// Plural is the URL segment, e.g. "neutronrouterflavors".
	Plural string
	Kind   string
	// StatusSubresource routes status writes to /status and makes writes to the main resource
	// ignore status, as the real server does for a CRD that declares `subresources.status`.
	StatusSubresource bool
	// Core marks a built-in type (served under /api/v1); list items then carry no apiVersion/kind,
	// as the real server's JSON does.
	Core bool
}

// SecretResource is core/v1 Secrets, which hold the clouds.yaml credentials.
var SecretResource = Resource{Version: "v1", Plural: "secrets", Kind: "Secret", Core: true}

// APIVersion is the apiVersion objects of this resource carry.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// GVR is the client-go address of the resource.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Plural}
}

// GroupResource is how the real server names the resource in error messages ("plural.group").
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// crdDocument is the part of a CustomResourceDefinition the fake needs.
type crdDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name         string         `json:"name"`
			Served       bool           `json:"served"`
			Storage      bool           `json:"storage"`
			Subresources map[string]any `json:"subresources"`
		} `json:"versions"`
	} `json:"spec"`
}

// ParseCRD reads one CustomResourceDefinition document and returns its storage version as a
// Resource. Only namespaced CRDs are accepted: the framework addresses every CR by namespace.
func ParseCRD(data []byte) (Resource, error) {
	var doc crdDocument
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Resource{}, fmt.Errorf("parse CRD: %w", err)
	}
	if doc.Kind != "CustomResourceDefinition" {
		return Resource{}, fmt.Errorf("parse CRD: kind is %q, want CustomResourceDefinition", doc.Kind)
	}
	s := doc.Spec
	switch {
	case s.Group == "":
		return Resource{}, errors.New("parse CRD: spec.group is empty")
	case s.Names.Kind == "":
		return Resource{}, fmt.Errorf("parse CRD %s: spec.names.kind is empty", s.Group)
	case s.Names.Plural == "":
		return Resource{}, fmt.Errorf("parse CRD %s: spec.names.plural is empty", s.Group)
	case s.Scope != "Namespaced":
		return Resource{}, fmt.Errorf("parse CRD %s.%s: scope is %q; only Namespaced is served", s.Names.Plural, s.Group, s.Scope)
	}
	for _, v := range s.Versions {
		if !v.Storage {
			continue
		}
		_, status := v.Subresources["status"]
		return Resource{
			Group: s.Group, Version: v.Name, Plural: s.Names.Plural, Kind: s.Names.Kind,
			StatusSubresource: status,
		}, nil
	}
	return Resource{}, fmt.Errorf("parse CRD %s.%s: no version has storage: true", s.Names.Plural, s.Group)
}

// ParseCRDFile reads and parses one CRD file.
func ParseCRDFile(path string) (Resource, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Resource{}, fmt.Errorf("load CRD: %w", err)
	}
	r, err := ParseCRD(data)
	if err != nil {
		return Resource{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// LoadCRDs parses every *.yaml file of dir as a CRD, sorted by file name.
func LoadCRDs(dir string) ([]Resource, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load CRDs: no *.yaml file in %s", dir)
	}
	sort.Strings(files)
	out := make([]Resource, 0, len(files))
	for _, f := range files {
		r, err := ParseCRDFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ResourceName is the `<plural>.<group>` form the chart passes in <PREFIX>_CRD_RESOURCE.
func (r Resource) ResourceName() string {
	return strings.TrimSuffix(r.Plural+"."+r.Group, ".")
}
