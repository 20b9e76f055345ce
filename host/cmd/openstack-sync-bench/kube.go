package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube/shelloperator"
)

// cluster is the Kubernetes API the hooks talk to: a real kube-apiserver started by
// hack/kube-up.sh on ports of its own, or the in-process fakekube when the tools are absent.
// Hooks reach it through a counting proxy, so every run reports its Kubernetes requests; the
// harness's own set-up goes straight to the server and is not counted.
type cluster struct {
	kind string // "kube-apiserver v…" or "in-process fakekube"
	// direct is a kubeconfig straight to a real API server (not through the counting proxy), for
	// the real shell-operator; "" with fakekube.
	direct string
	// setup is a kubeconfig straight to the API server for the unmeasured set-up passes, which
	// need no request counts: one hop less for every one of their tens of thousands of writes.
	setup string
	// fake is the in-process API server, which the harness's own writes may skip HTTP for; nil
	// with a real one.
	fake *fakekube.Server
	// bin is the folder of the Kubernetes tools (the shell-operator among them); "" with fakekube.
	bin   string
	dyn   dynamic.Interface
	proxy *httptest.Server
	token string
	stop  func()

	mu     sync.Mutex
	counts map[string]int // "METHOD" -> n since the last take
}

// kubeTools finds the folder hack/k8s-tools.sh fills, without building anything.
func kubeTools() string {
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(gopath)), "openstack-sync-tools", "kube-*", "bin", "kube-apiserver"))
	for i := len(matches) - 1; i >= 0; i-- {
		// A folder still being filled has the API server before etcd, or the other way round.
		dir := filepath.Dir(matches[i])
		if _, err := os.Stat(filepath.Join(dir, "etcd")); err == nil {
			return dir
		}
	}
	return ""
}

// startCluster starts the API server named by mode ("auto", "real" or "fake").
func startCluster(ctx context.Context, mode, repo, state string, portBase int, crds []fakekube.Resource, crdDir string) (*cluster, error) {
	bin := ""
	if mode != "fake" {
		bin = kubeTools()
		if bin == "" && mode == "real" {
			return nil, fmt.Errorf("--kube real: no kube-apiserver under $(go env GOPATH)/openstack-sync-tools (run hack/k8s-tools.sh)")
		}
	}
	c := &cluster{counts: map[string]int{}}
	var target *url.URL
	var cfg *rest.Config
	if bin != "" {
		dir := filepath.Join(state, "kube")
		// Ports of their own, so a bench never collides with an e2e run's defaults.
		cmd := exec.CommandContext(ctx, filepath.Join(repo, "hack", "kube-up.sh"), dir)
		cmd.Env = append(os.Environ(), "K8S_BIN="+bin, fmt.Sprintf("ETCD_PORT=%d", portBase+379),
			fmt.Sprintf("ETCD_PEER_PORT=%d", portBase+380), fmt.Sprintf("KUBE_API_PORT=%d", portBase+4443))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			exec.Command(filepath.Join(repo, "hack", "kube-down.sh"), dir).Run()
			return nil, fmt.Errorf("hack/kube-up.sh: %w", err)
		}
		c.stop = func() { exec.Command(filepath.Join(repo, "hack", "kube-down.sh"), dir).Run() }
		kc, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
		if err != nil {
			c.stop()
			return nil, err
		}
		if cfg, err = clientcmd.RESTConfigFromKubeConfig(kc); err != nil {
			c.stop()
			return nil, err
		}
		ver, _ := exec.Command(filepath.Join(bin, "kube-apiserver"), "--version").Output()
		c.kind = "real " + strings.TrimSpace(string(ver))
		c.direct, c.bin = filepath.Join(dir, "kubeconfig"), bin
		c.setup = c.direct
	} else {
		srv, err := fakekube.Start(crds...)
		if err != nil {
			return nil, err
		}
		// Nothing here reads the server's event log, which would hold every state of every CR.
		srv.DiscardEvents()
		c.setup = filepath.Join(state, "kubeconfig-setup")
		if err := srv.WriteKubeconfig(c.setup); err != nil {
			srv.Close()
			return nil, err
		}
		c.stop, c.fake = srv.Close, srv
		if cfg, err = clientcmd.RESTConfigFromKubeConfig(srv.Kubeconfig()); err != nil {
			srv.Close()
			return nil, err
		}
		c.kind = "in-process fakekube (kube-apiserver not built; run hack/k8s-tools.sh)"
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	c.token = cfg.BearerToken
	var err error
	if target, err = url.Parse(cfg.Host); err != nil {
		c.stop()
		return nil, err
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		c.stop()
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 16}
	c.proxy = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.counts[r.Method]++
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	if bin != "" {
		if err := c.installCRDs(ctx, crdDir, crds); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (c *cluster) close() {
	if c.proxy != nil {
		c.proxy.Close()
	}
	if c.stop != nil {
		c.stop()
	}
}

// kubeconfig is what a hook uses: the counting proxy.
func (c *cluster) kubeconfig() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: bench, user: {token: %q}}]
contexts: [{name: bench, context: {cluster: bench, user: bench, namespace: default}}]
current-context: bench
`, c.proxy.URL, c.token)
}

// take returns and clears the request counts by method.
func (c *cluster) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts = map[string]int{}
	return out
}

var (
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	secretGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func (c *cluster) installCRDs(ctx context.Context, dir string, crds []fakekube.Resource) error {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(js); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := c.dyn.Resource(crdGVR).Create(ctx, &obj, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("creating the CRD of %s: %w", f, err)
		}
	}
	// A CRD serves its resources shortly after it is created.
	for _, r := range crds {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := c.dyn.Resource(r.GVR()).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not served after 30s: %w", r.ResourceName(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// ensureNamespace creates ns on a real server (fakekube has no namespace objects).
func (c *cluster) ensureNamespace(ctx context.Context, ns string) error {
	if !strings.HasPrefix(c.kind, "real") {
		return nil
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns}}}
	_, err := c.dyn.Resource(namespaceGVR).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// putSecret creates or replaces a credentials Secret.
func (c *cluster) putSecret(ctx context.Context, ns, name, cloudsYAML string) error {
	return c.putSecretData(ctx, ns, name, map[string]any{"clouds.yaml": cloudsYAML})
}

// putSecretData creates or updates a Secret with the given stringData.
func (c *cluster) putSecretData(ctx context.Context, ns, name string, data map[string]any) error {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": ns}, "type": "Opaque",
		"stringData": data}}
	res := c.dyn.Resource(secretGVR).Namespace(ns)
	if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"stringData": data})
	_, err := res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// parallel runs f for 0..n-1 on a few goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	const workers = 8
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// bindingContext is a Schedule run's binding context holding every CR of ns, as shell-operator
// writes it for a schedule binding that includes the CRs' snapshot, each item as the watch w
// keeps it (its jqFilter and keepFullObjectsInMemory): what the hook under test asked for.
func (c *cluster) bindingContext(ctx context.Context, r fakekube.Resource, ns, binding string, w shelloperator.KubernetesBinding) ([]byte, int, error) {
	var objects []map[string]any
	if c.fake != nil {
		// In process: the same objects without listing 20,000 of them over HTTP before every pass.
		list, err := c.fake.List(r, ns, "")
		if err != nil {
			return nil, 0, err
		}
		objects = list
	} else {
		list, err := c.dyn.Resource(r.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, 0, err
		}
		for _, it := range list.Items {
			objects = append(objects, it.Object)
		}
	}
	items := make([]any, 0, len(objects))
	for _, obj := range objects {
		items = append(items, shelloperator.Item(w, obj))
	}
	var buf bytes.Buffer
	err := json.NewEncoder(&buf).Encode([]any{map[string]any{
		"binding": "periodic sync", "type": "Schedule", "snapshots": map[string]any{binding: items}}})
	return buf.Bytes(), len(items), err
}
