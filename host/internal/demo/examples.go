package demo

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
)

// example is one object of the examples directory.
type example struct {
	File   string
	Object map[string]any
}

func (e example) kind() string { s, _ := e.Object["kind"].(string); return s }

func (e example) apiVersion() string { s, _ := e.Object["apiVersion"].(string); return s }

func (e example) meta() map[string]any { m, _ := e.Object["metadata"].(map[string]any); return m }

func (e example) name() string { s, _ := e.meta()["name"].(string); return s }

func (e example) namespace() string { s, _ := e.meta()["namespace"].(string); return s }

// loadExamples reads every YAML document of dir's *.yaml files, in file-name order.
func loadExamples(dir string) ([]example, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("examples: no *.yaml file in %s", dir)
	}
	sort.Strings(files)
	var out []example
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("examples: %w", err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 1; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("examples: %s: %w", f, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("examples: %s document %d: %w", f, i, err)
			}
			var obj map[string]any
			if err := json.Unmarshal(js, &obj); err != nil || obj == nil {
				// Comment-only documents decode to null.
				continue
			}
			if _, ok := obj["kind"].(string); !ok {
				return nil, fmt.Errorf("examples: %s document %d has no kind", f, i)
			}
			out = append(out, example{File: filepath.Base(f), Object: obj})
		}
	}
	return out, nil
}

// rewriteCloudsYAML points every cloud of an example clouds.yaml at the in-process cloud: an
// entry named like one of the fake's clouds (the examples use the test harness's names) gets that
// cloud; otherwise an entry that asks for a system-scoped token gets the fake's system-scoped
// cloud, any other the fake's project-scoped admin cloud. The fake's own entries are kept too, so a CR naming one of
// them also works. The result is the clouds.yaml the demo's Secret carries.
func rewriteCloudsYAML(example, fake string, systemCloud, adminCloud string) (string, []string, error) {
	var ex, fk struct {
		Clouds map[string]map[string]any `json:"clouds"`
	}
	if err := yaml.Unmarshal([]byte(example), &ex); err != nil {
		return "", nil, fmt.Errorf("example clouds.yaml: %w", err)
	}
	if len(ex.Clouds) == 0 {
		return "", nil, errors.New("example clouds.yaml has no clouds")
	}
	if err := yaml.Unmarshal([]byte(fake), &fk); err != nil {
		return "", nil, fmt.Errorf("in-process cloud clouds.yaml: %w", err)
	}
	out := map[string]any{}
	for name, entry := range fk.Clouds {
		out[name] = entry
	}
	var notes []string
	names := make([]string, 0, len(ex.Clouds))
	for name := range ex.Clouds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		target := adminCloud
		switch {
		case fk.Clouds[name] != nil:
			target = name
		case wantsSystemScope(ex.Clouds[name]):
			target = systemCloud
		}
		entry, ok := fk.Clouds[target]
		if !ok {
			return "", nil, fmt.Errorf("in-process cloud clouds.yaml has no cloud %q", target)
		}
		out[name] = entry
		notes = append(notes, fmt.Sprintf("cloud %q -> in-process %s", name, target))
	}
	data, err := yaml.Marshal(map[string]any{"clouds": out})
	if err != nil {
		return "", nil, err
	}
	return string(data), notes, nil
}

func wantsSystemScope(entry map[string]any) bool {
	if _, ok := entry["system_scope"]; ok {
		return true
	}
	auth, _ := entry["auth"].(map[string]any)
	_, ok := auth["system_scope"]
	return ok
}

// secretCloudsYAML returns the clouds.yaml text of a Secret object, from stringData or data.
func secretCloudsYAML(obj map[string]any) (string, bool) {
	if sd, ok := obj["stringData"].(map[string]any); ok {
		if s, ok := sd["clouds.yaml"].(string); ok {
			return s, true
		}
	}
	if d, ok := obj["data"].(map[string]any); ok {
		if s, ok := d["clouds.yaml"].(string); ok {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err == nil {
				return string(raw), true
			}
		}
	}
	return "", false
}

// setSecretCloudsYAML replaces a Secret object's clouds.yaml, stored as data like the API does.
func setSecretCloudsYAML(obj map[string]any, text string) {
	if sd, ok := obj["stringData"].(map[string]any); ok {
		delete(sd, "clouds.yaml")
		if len(sd) == 0 {
			delete(obj, "stringData")
		}
	}
	d, _ := obj["data"].(map[string]any)
	if d == nil {
		d = map[string]any{}
	}
	d["clouds.yaml"] = base64.StdEncoding.EncodeToString([]byte(text))
	obj["data"] = d
}

// seed stores the examples in kube: Secrets with their clouds.yaml rewritten for the in-process
// cloud, and CRs of the served kinds. Objects without a namespace go to defaultNamespace. Other
// kinds are skipped with a note.
func seed(kube *fakekube.Server, examples []example, fakeClouds, systemCloud, adminCloud, defaultNamespace string) ([]string, error) {
	var notes []string
	for _, ex := range examples {
		ns := ex.namespace()
		if ns == "" {
			ns = defaultNamespace
		}
		obj := ex.Object
		var r fakekube.Resource
		switch {
		case ex.kind() == "Secret" && ex.apiVersion() == "v1":
			r = fakekube.SecretResource
			text, ok := secretCloudsYAML(obj)
			if !ok {
				notes = append(notes, fmt.Sprintf("%s: Secret %s/%s has no clouds.yaml; stored as is", ex.File, ns, ex.name()))
				break
			}
			rewritten, cloudNotes, err := rewriteCloudsYAML(text, fakeClouds, systemCloud, adminCloud)
			if err != nil {
				return nil, fmt.Errorf("%s: Secret %s/%s: %w", ex.File, ns, ex.name(), err)
			}
			setSecretCloudsYAML(obj, rewritten)
			for _, n := range cloudNotes {
				notes = append(notes, fmt.Sprintf("Secret %s/%s: %s", ns, ex.name(), n))
			}
		default:
			var ok bool
			r, ok = kube.ResourceFor(ex.apiVersion(), ex.kind())
			if !ok {
				notes = append(notes, fmt.Sprintf("%s: skipped %s %s (no CRD for it in the demo)", ex.File, ex.kind(), ex.name()))
				continue
			}
		}
		if _, err := kube.Create(r, ns, obj); err != nil {
			return nil, fmt.Errorf("%s: create %s %s/%s: %w", ex.File, ex.kind(), ns, ex.name(), err)
		}
	}
	return notes, nil
}

// namespaceOf picks the namespace the hooks watch: the one the examples' Secrets live in (the
// CRs read credentials from their own namespace), else "openstack".
func namespaceOf(examples []example) string {
	for _, ex := range examples {
		if ex.kind() == "Secret" && ex.namespace() != "" {
			return ex.namespace()
		}
	}
	for _, ex := range examples {
		if ex.namespace() != "" {
			return ex.namespace()
		}
	}
	return "openstack"
}

// trimmed shortens s to n runes for a table cell.
func trimmed(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
