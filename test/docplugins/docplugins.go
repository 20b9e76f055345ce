// Package docplugins holds the plugins the documentation shows: every fenced Go block of a page
// that is a whole plugin (package main). Its tests build them as written and run them through the
// conformance kit (make test); test/e2e runs them against the real Keystone and Neutron (make
// e2e), so the pages cannot show a plugin that does not work.
package docplugins

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Plugin is one plugin of a page.
type Plugin struct {
	// Doc and Line say where it is: the page and the line of its opening fence.
	Doc  string
	Line int
	// Name is its Metadata.Name.
	Name string
	// Source is the block's text, verbatim.
	Source string
}

var nameField = regexp.MustCompile(`(?m)^\s*Name:\s+"([a-z0-9-]+)"`)

// Extract returns the plugins of the page doc (a path relative to the repository root).
func Extract(repoRoot, doc string) ([]Plugin, error) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		return nil, err
	}
	var out []Plugin
	var block []string
	start, inGo := 0, false
	for i, line := range strings.Split(string(raw), "\n") {
		switch {
		case !inGo && strings.TrimSpace(line) == "```go":
			inGo, start, block = true, i+1, nil
		case inGo && strings.TrimSpace(line) == "```":
			inGo = false
			src := strings.Join(block, "\n") + "\n"
			if !strings.HasPrefix(src, "package main\n") {
				continue
			}
			m := nameField.FindStringSubmatch(src)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: a plugin without a Metadata Name", doc, start)
			}
			out = append(out, Plugin{Doc: doc, Line: start, Name: m[1], Source: src})
		case inGo:
			block = append(block, line)
		}
	}
	return out, nil
}

// Write makes dir a module holding the plugin as main.go, its PDK the checkout's at repoRoot.
func (p Plugin) Write(dir, repoRoot string) error {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mod := fmt.Sprintf("module example.org/%s\n\ngo 1.26\n\nrequire (\n\tgithub.com/extism/go-pdk v1.1.3\n"+
		"\tgithub.com/openstack-sync/openstack-sync/pdk v0.0.0\n)\n\nreplace github.com/openstack-sync/openstack-sync/pdk => %s\n",
		p.Name, filepath.Join(root, "pdk"))
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "main.go"), []byte(p.Source), 0o644)
}

// CR is the spec a test gives a plugin of the pages for a CR named name (an OpenStack name that
// holds name, so a test's names can be unique on a shared cloud).
func (p Plugin) CR(name string) (kind string, spec map[string]any, ok bool) {
	switch p.Name {
	case "neutron-widgets":
		return "NeutronWidget", map[string]any{"name": name, "description": "a widget"}, true
	case "neutron-address-scopes":
		return "NeutronAddressScope", map[string]any{"resource": map[string]any{"name": name, "ip_version": 4}}, true
	case "keystone-projects":
		return "KeystoneProject", map[string]any{"resource": map[string]any{"name": name, "description": "a project",
			"tags": []any{"docs"}}}, true
	}
	return "", nil, false
}

// ShellBlocks returns the fenced sh blocks of the page doc whose first line contains marker, in
// order, each as its command lines (a line ending in a backslash joined with the next).
func ShellBlocks(repoRoot, doc, marker string) ([][]string, error) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		return nil, err
	}
	var blocks [][]string
	var cur []string
	in, pending := false, ""
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case !in && l == "```sh":
			in, cur = true, nil
		case in && strings.HasPrefix(l, "```"):
			in = false
			if len(cur) > 0 && strings.Contains(cur[0], marker) {
				blocks = append(blocks, cur)
			}
		case in && strings.HasSuffix(l, "\\"):
			pending += strings.TrimSuffix(l, "\\")
		case in:
			cur = append(cur, pending+l)
			pending = ""
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%s has no sh block marked %q", doc, marker)
	}
	return blocks, nil
}
