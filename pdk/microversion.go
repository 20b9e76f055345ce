package pdk

import (
	"fmt"
	"strconv"
	"strings"
)

// APIVersion is an OpenStack API microversion, MAJOR.MINOR (e.g. Ironic's 1.92).
type APIVersion struct{ Major, Minor int }

func (v APIVersion) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// Less reports whether v is older than o.
func (v APIVersion) Less(o APIVersion) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

// IsZero reports whether v is the zero value (no version).
func (v APIVersion) IsZero() bool { return v == APIVersion{} }

// ParseAPIVersion reads "MAJOR.MINOR". "latest" is refused: a plugin must know what it speaks.
func ParseAPIVersion(s string) (APIVersion, error) {
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || a < 1 || b < 0 {
		return APIVersion{}, fmt.Errorf("not an API microversion (MAJOR.MINOR): %q", s)
	}
	return APIVersion{a, b}, nil
}

// MicroversionError says the service's microversion cannot serve the plugin: its version
// document names no usable maximum, or the maximum is older than the plugin needs. Waiting does
// not change that, so the error is permanent.
type MicroversionError struct {
	// Service is the catalog service type.
	Service string
	// Offered is the maximum the version document names, as written ("" when none).
	Offered string
	// Required is the oldest microversion the plugin can work with.
	Required APIVersion
	msg      string
}

func (e *MicroversionError) Error() string   { return e.msg }
func (e *MicroversionError) Permanent() bool { return true }

// serviceNames are the project names operators know the catalog types by, for error text.
var serviceNames = map[string]string{
	"baremetal": "Ironic", "network": "Neutron", "compute": "Nova", "identity": "Keystone",
	"image": "Glance", "block-storage": "Cinder", "volumev3": "Cinder", "placement": "Placement",
	"load-balancer": "Octavia", "dns": "Designate", "object-store": "Swift", "shared-file-system": "Manila",
}

func serviceName(service string) string {
	if n, ok := serviceNames[service]; ok {
		return n
	}
	return service
}

// versionDocument is the unversioned root document of a microversioned service, or (when the
// catalog lists the endpoint with its version) the versioned one.
type versionDocument struct {
	Versions []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"versions"`
	DefaultVersion *struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"default_version"`
	Version *struct {
		ID      string `json:"id"`
		Version string `json:"version"`
	} `json:"version"`
}

func (d *versionDocument) maximum(api string) string {
	for _, v := range d.Versions {
		if v.ID == api && v.Version != "" {
			return v.Version
		}
	}
	if d.DefaultVersion != nil && (d.DefaultVersion.ID == "" || d.DefaultVersion.ID == api) && d.DefaultVersion.Version != "" {
		return d.DefaultVersion.Version
	}
	if d.Version != nil && (d.Version.ID == "" || d.Version.ID == api) {
		return d.Version.Version
	}
	return ""
}

// NegotiateMicroversion returns the microversion to speak with the service: the highest its
// version document offers for api (e.g. "v1"), capped at newest (the newest the plugin was
// written against, so a newer service cannot change what it answers). A maximum older than
// oldest, or none at all, is a *MicroversionError. The document is read once per credential
// group: the answer is kept in the group cache.
func (s *ServiceClient) NegotiateMicroversion(api string, oldest, newest APIVersion) (APIVersion, error) {
	key := "pdk/microversion/" + s.service + "/" + api + "/" + oldest.String() + "-" + newest.String()
	if v, ok := s.cache[key].(APIVersion); ok {
		return v, nil
	}
	var doc versionDocument
	// The root document is unversioned: no microversion header.
	if err := s.Microversion("").Get("/", nil, &doc); err != nil {
		return APIVersion{}, fmt.Errorf("read the %s version document: %w", serviceName(s.service), err)
	}
	v, err := negotiate(s.service, doc.maximum(api), api, oldest, newest)
	if err != nil {
		return APIVersion{}, err
	}
	if s.cache != nil {
		s.cache[key] = v
	}
	return v, nil
}

func negotiate(service, offered, api string, oldest, newest APIVersion) (APIVersion, error) {
	name := serviceName(service)
	fail := func(format string, args ...any) (APIVersion, error) {
		return APIVersion{}, &MicroversionError{Service: service, Offered: offered, Required: oldest,
			msg: fmt.Sprintf(format, args...)}
	}
	switch offered {
	case "":
		return fail("Could not determine the %s API microversion: the version document names no %s maximum", name, api)
	case "latest":
		return fail("%s reported an unusable API microversion 'latest'", name)
	}
	max, err := ParseAPIVersion(offered)
	if err != nil {
		return fail("%s reported an unreadable API microversion %q", name, offered)
	}
	if max.Less(oldest) {
		return fail("%s supports API microversion %s but this plugin requires %s; upgrade %s", name, max, oldest, name)
	}
	if newest.Less(max) {
		return newest, nil
	}
	return max, nil
}
