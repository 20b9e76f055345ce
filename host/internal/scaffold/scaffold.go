// Package scaffold writes a new plugin module (`openstack-sync plugin new`): a lifecycle plugin
// (pdk/lifecycle: create, keep converged, import, adopt, delete per CR) for one OpenStack
// collection of any service, its spec derived from the real service's rules (host/internal/osapi)
// when openstack-sync knows the collection, with unit tests against pdktest's stateful fake, the
// conformance kit's suite, a CRD with the lifecycle's validation rules and the status the host
// writes, example CRs (valid and invalid), a README saying where ownership lives and what that
// costs, and a Makefile. As generated it passes go vet (native and wasip1), its tests and the kit;
// the author then adapts it.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"go/format"
	"golang.org/x/mod/semver"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

//go:embed templates
var templates embed.FS

// Options choose what is generated. Only Name is required; the rest derive from it.
type Options struct {
	// Name is the plugin's name, lower-case words joined by dashes and usually plural, e.g.
	// "keystone-projects".
	Name string
	// Service is the catalog type (identity, network, baremetal) or its project's name
	// (keystone, neutron, ironic); default the name's first word.
	Service string
	// Collection is the collection to manage, by name ("projects") or path ("v3/projects");
	// default the name without its first word.
	Collection string
	// Ownership is where the plugin marks what it made; default a tag where the resource has
	// tags, else its description, else a name prefix.
	Ownership Ownership
	// Module is the Go module path; default example.org/<Name>.
	Module string
	// Group is the CRD's API group; default example.org.
	Group string
	// Kind is the CRD's kind; default the name's words, singular, in CamelCase (KeystoneProject).
	Kind string
	// Path and Key describe a Neutron collection openstack-sync does not know (its path and
	// singular body key); the plugin is then generic and the embedded cloud predicts little.
	Path, Key string
	// Version is the openstack-sync release the module requires (the version of the binary
	// that writes it, e.g. v0.1.0): go.mod then requires both openstack-sync modules at it and
	// go fetches them (from the public proxy once published, from the release's module archive
	// until then). Without a version (a binary built from a checkout), or with PDK or HostModule
	// set, go.mod replaces the modules with a checkout instead.
	Version string
	// PDK and HostModule are the replace targets of the openstack-sync modules; defaults
	// ./third_party/openstack-sync/pdk and ./third_party/openstack-sync.
	PDK, HostModule string
}

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)+$`)
	groupRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`)
	kindRE  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	pathRE  = regexp.MustCompile(`^v2\.0/[a-z0-9_-]+$`)
	keyRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// moduleRE is a Go module path: the characters go.mod takes unquoted, in /-separated elements.
	// What lands in go.mod must stay one token: a line break would write lines of its own.
	moduleRE = regexp.MustCompile(`^[A-Za-z0-9][-._~A-Za-z0-9]*(/[-._~A-Za-z0-9]+)*$`)
	// replaceRE is a replace target in go.mod: a path without spaces, quotes or control characters.
	replaceRE = regexp.MustCompile(`^[^\s"'\x60\x00-\x1f\x7f]+$`)
)

// singular drops a plural s (scopes -> scope, policies -> policy).
func singular(word string) string {
	switch {
	case strings.HasSuffix(word, "ies"):
		return strings.TrimSuffix(word, "ies") + "y"
	case strings.HasSuffix(word, "sses"), strings.HasSuffix(word, "xes"):
		return strings.TrimSuffix(word, "es")
	case strings.HasSuffix(word, "s") && !strings.HasSuffix(word, "ss"):
		return strings.TrimSuffix(word, "s")
	}
	return word
}

// resolve finds the collection: a known one by service and name, or a generic Neutron one.
func (o Options) resolve(words []string) (*osapi.Resource, bool, error) {
	service := o.Service
	if service == "" {
		service = words[0]
	}
	svc, err := serviceOf(service)
	if err != nil {
		if o.Service == "" {
			return nil, false, fmt.Errorf("plugin name %q: its first word is no service (keystone, neutron, ironic); pass --service and --collection", o.Name)
		}
		return nil, false, err
	}
	if o.Path != "" || o.Key != "" {
		path := o.Path
		if path == "" {
			path = "v2.0/" + strings.Join(words[1:], "-")
		}
		switch {
		case svc != osapi.Network:
			return nil, false, fmt.Errorf("--path and --key describe a Neutron collection; %s collections must be ones openstack-sync knows (%s)",
				svc, strings.Join(osapi.Names(), ", "))
		case !pathRE.MatchString(path):
			return nil, false, fmt.Errorf("path %q: want a Neutron collection, v2.0/<name>", path)
		}
		if r, ok := osapi.Lookup(svc, path); ok {
			return r, true, nil
		}
		key := o.Key
		if key == "" {
			key = strings.ReplaceAll(singular(path[strings.LastIndex(path, "/")+1:]), "-", "_")
		}
		if !keyRE.MatchString(key) {
			return nil, false, fmt.Errorf("key %q: want the singular body key, e.g. address_scope", key)
		}
		return genericResource(path, key), false, nil
	}
	collection := o.Collection
	if collection == "" {
		collection = strings.Join(words[1:], "-")
	}
	if r, ok := osapi.Lookup(svc, collection); ok {
		return r, true, nil
	}
	return nil, false, fmt.Errorf("%s:%s is not a collection openstack-sync knows the rules of (it knows %s); "+
		"for another Neutron collection pass --path v2.0/<name> and --key <body key>: the plugin is then generic and the "+
		"embedded cloud predicts little of what the real service refuses", svc, collection, strings.Join(osapi.Names(), ", "))
}

func (o Options) derive() (*model, error) {
	if !nameRE.MatchString(o.Name) {
		return nil, fmt.Errorf("plugin name %q: want lower-case words joined by dashes, at least two, e.g. keystone-projects", o.Name)
	}
	words := strings.Split(o.Name, "-")
	r, known, err := o.resolve(words)
	if err != nil {
		return nil, err
	}
	last := len(words) - 1
	one := append([]string{}, words...)
	one[last] = singular(words[last])
	m := &model{Options: o, res: r, Known: known}
	if m.Module == "" {
		m.Module = "example.org/" + o.Name
	}
	if m.Group == "" {
		m.Group = "example.org"
	}
	if m.Kind == "" {
		for _, w := range one {
			m.Kind += strings.ToUpper(w[:1]) + w[1:]
		}
	}
	m.ModVersion = "v0.0.0"
	if semver.IsValid(o.Version) && o.PDK == "" && o.HostModule == "" {
		m.ModVersion = o.Version
	} else {
		m.Replace = true
		if m.PDK == "" {
			m.PDK = "./third_party/openstack-sync/pdk"
		}
		if m.HostModule == "" {
			m.HostModule = "./third_party/openstack-sync"
		}
	}
	switch {
	case !groupRE.MatchString(m.Group):
		return nil, fmt.Errorf("group %q is not a DNS subdomain with a dot, e.g. example.org", m.Group)
	case !kindRE.MatchString(m.Kind):
		return nil, fmt.Errorf("kind %q: want CamelCase, e.g. KeystoneProject", m.Kind)
	case !moduleRE.MatchString(m.Module):
		return nil, fmt.Errorf("module %q: want a Go module path (letters, digits, '-', '.', '_', '~' in /-separated elements), e.g. example.org/neutron-address-scopes", m.Module)
	case m.Replace && !replaceRE.MatchString(m.PDK):
		return nil, fmt.Errorf("pdk %q: want a path without spaces, quotes or control characters", m.PDK)
	case m.Replace && !replaceRE.MatchString(m.HostModule):
		return nil, fmt.Errorf("host-module %q: want a path without spaces, quotes or control characters", m.HostModule)
	}
	if m.Ownership == "" {
		m.Ownership = defaultOwnership(r)
	}
	if err := m.checkOwnership(); err != nil {
		return nil, err
	}
	m.Plural = strings.ReplaceAll(o.Name, "-", "")
	m.Singular = strings.ToLower(m.Kind)
	m.EnvPrefix = strings.ToUpper(strings.Join(one, "_"))
	m.fields = resourceFields(r)
	return m, nil
}

// Write generates the module into dir, which must not exist or be empty, and returns the files
// written, relative to dir.
func Write(dir string, o Options) ([]string, error) {
	m, err := o.derive()
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty; plugin new writes a new module", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	files := map[string][]byte{}
	err = fs.WalkDir(templates, "templates", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		raw, err := templates.ReadFile(path)
		if err != nil {
			return err
		}
		t, err := template.New(path).Option("missingkey=error").Parse(string(raw))
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := t.Execute(&out, m); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(path, "templates/"), ".tmpl")
		b := out.Bytes()
		if strings.HasSuffix(rel, ".go") {
			if b, err = format.Source(b); err != nil {
				return fmt.Errorf("generating %s: %w\n%s", rel, err, out.Bytes())
			}
		}
		files[rel] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name, body := range m.invalidExamples() {
		files[name] = body
	}
	var written []string
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		b := files[rel]
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return nil, err
		}
		written = append(written, rel)
	}
	return written, nil
}
