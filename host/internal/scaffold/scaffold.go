// Package scaffold writes a new plugin module (`openstack-sync plugin new`): a Go plugin for one
// Neutron resource collection, with unit tests, the conformance kit's suite, a CRD with the
// status fields the host writes, an example CR and a Makefile. As generated it builds and passes
// the conformance kit; the author then adapts it to the resource.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

//go:embed templates
var templates embed.FS

// Options choose what is generated. Only Name is required; the rest derive from it.
type Options struct {
	// Name is the plugin's name, lower-case words joined by dashes and usually plural, e.g.
	// "neutron-address-scopes".
	Name string
	// Module is the Go module path; default example.org/<Name>.
	Module string
	// Group is the CRD's API group; default example.org.
	Group string
	// Kind is the CRD's kind; default the name's words, singular, in CamelCase
	// (NeutronAddressScope).
	Kind string
	// Path is the Neutron collection the plugin manages; default v2.0/<name without its
	// first word>, e.g. v2.0/address-scopes.
	Path string
	// Key is the collection's singular body key; default the last path segment, singular,
	// with underscores (address_scope).
	Key string
	// PDK and HostModule are the replace targets of the openstack-sync modules until they can
	// be fetched; defaults ./third_party/openstack-sync/pdk and ./third_party/openstack-sync.
	PDK, HostModule string
}

// data is what the templates see.
type data struct {
	Options
	Plural, Singular, Noun, EnvPrefix, ListKey string
}

var (
	nameRE  = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)+$`)
	groupRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`)
	kindRE  = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	pathRE  = regexp.MustCompile(`^v2\.0/[a-z0-9_-]+$`)
	keyRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
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

func (o Options) derive() (data, error) {
	if !nameRE.MatchString(o.Name) {
		return data{}, fmt.Errorf("plugin name %q: want lower-case words joined by dashes, at least two, e.g. neutron-address-scopes", o.Name)
	}
	words := strings.Split(o.Name, "-")
	last := len(words) - 1
	one := append([]string{}, words...)
	one[last] = singular(words[last])
	d := data{Options: o}
	if d.Module == "" {
		d.Module = "example.org/" + o.Name
	}
	if d.Group == "" {
		d.Group = "example.org"
	}
	if d.Kind == "" {
		for _, w := range one {
			d.Kind += strings.ToUpper(w[:1]) + w[1:]
		}
	}
	if d.Path == "" {
		d.Path = "v2.0/" + strings.Join(words[1:], "-")
	}
	if d.Key == "" {
		d.Key = strings.ReplaceAll(singular(d.Path[strings.LastIndex(d.Path, "/")+1:]), "-", "_")
	}
	if d.PDK == "" {
		d.PDK = "./third_party/openstack-sync/pdk"
	}
	if d.HostModule == "" {
		d.HostModule = "./third_party/openstack-sync"
	}
	switch {
	case !groupRE.MatchString(d.Group):
		return data{}, fmt.Errorf("group %q is not a DNS subdomain with a dot, e.g. example.org", d.Group)
	case !kindRE.MatchString(d.Kind):
		return data{}, fmt.Errorf("kind %q: want CamelCase, e.g. NeutronAddressScope", d.Kind)
	case !pathRE.MatchString(d.Path):
		return data{}, fmt.Errorf("path %q: want a Neutron collection, v2.0/<name>", d.Path)
	case !keyRE.MatchString(d.Key):
		return data{}, fmt.Errorf("key %q: want the singular body key, e.g. address_scope", d.Key)
	}
	d.Plural = strings.ReplaceAll(o.Name, "-", "")
	d.Singular = strings.ToLower(d.Kind)
	d.Noun = strings.ReplaceAll(d.Key, "_", " ")
	d.EnvPrefix = strings.ToUpper(strings.Join(one, "_"))
	// Neutron names a list after its collection: /v2.0/address-scopes lists address_scopes.
	d.ListKey = strings.ReplaceAll(d.Path[strings.LastIndex(d.Path, "/")+1:], "-", "_")
	return d, nil
}

// Write generates the module into dir, which must not exist or be empty, and returns the
// files written, relative to dir.
func Write(dir string, o Options) ([]string, error) {
	d, err := o.derive()
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty; plugin new writes a new module", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var written []string
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
		if err := t.Execute(&out, d); err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(path, "templates/"), ".tmpl")
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		written = append(written, rel)
		return os.WriteFile(target, out.Bytes(), 0o644)
	})
	return written, err
}
