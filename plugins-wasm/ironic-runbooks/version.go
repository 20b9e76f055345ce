package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/osapi"
)

// version is an Ironic API microversion, 1.N.
type version struct{ major, minor int }

var (
	// runbooksVersion introduced /v1/runbooks.
	runbooksVersion = version{1, 92}
	// traitsVersion introduced runbook traits and descriptions.
	traitsVersion = version{1, 112}
	// newestKnown caps the version the plugin asks for: it speaks what it was written against,
	// not whatever a newer Ironic might change.
	newestKnown = traitsVersion
)

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func (v version) less(o version) bool {
	return v.major < o.major || (v.major == o.major && v.minor < o.minor)
}

func parseVersion(s string) (version, error) {
	if s == "latest" {
		return version{}, fmt.Errorf("Ironic reported an unusable API microversion 'latest'")
	}
	maj, min, ok := strings.Cut(s, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || a < 1 || b < 0 {
		return version{}, fmt.Errorf("Ironic reported an unreadable API microversion %q", s)
	}
	return version{a, b}, nil
}

// configError is a cloud the plugin cannot work with at all: retrying will not help.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// discoverVersion reads Ironic's root document (unversioned, so no microversion header) and
// returns the microversion to use: the highest the server offers, capped at newestKnown. Below
// runbooksVersion the plugin cannot work and says so as a configuration error.
func discoverVersion(svc osapi.Service) (version, error) {
	var root struct {
		Versions []struct {
			ID         string `json:"id"`
			Version    string `json:"version"`
			MinVersion string `json:"min_version"`
		} `json:"versions"`
		DefaultVersion *struct {
			ID      string `json:"id"`
			Version string `json:"version"`
		} `json:"default_version"`
		// A catalog that lists the endpoint with its /v1 serves the v1 document instead.
		Version *struct {
			Version string `json:"version"`
		} `json:"version"`
	}
	if err := svc.Call("GET", "/", nil, nil, &root); err != nil {
		return version{}, fmt.Errorf("read the Ironic version document: %w", err)
	}
	maxText := ""
	for _, v := range root.Versions {
		if v.ID == "v1" {
			maxText = v.Version
		}
	}
	if maxText == "" && root.DefaultVersion != nil {
		maxText = root.DefaultVersion.Version
	}
	if maxText == "" && root.Version != nil {
		maxText = root.Version.Version
	}
	if maxText == "" {
		return version{}, &configError{msg: "Could not determine the Ironic API microversion: the version document names no v1 maximum"}
	}
	max, err := parseVersion(maxText)
	if err != nil {
		return version{}, &configError{msg: err.Error()}
	}
	if max.less(runbooksVersion) {
		return version{}, &configError{msg: fmt.Sprintf(
			"Ironic supports API microversion %s but this plugin requires %s (runbooks); upgrade Ironic", max, runbooksVersion)}
	}
	if newestKnown.less(max) {
		return newestKnown, nil
	}
	return max, nil
}
