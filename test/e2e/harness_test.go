//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

const (
	chartDir = "../../charts/openstack-sync-operator"
	release  = "oso"
)

// env is what hack/e2e.sh hands over.
type env struct {
	Kubeconfig    string // admin kubeconfig of the test apiserver
	Helm          string
	ShellOperator string
	HostBinary    string
	PluginsDir    string
	CloudsYAML    string // clouds.yaml of the real cloud
	Cloud         string // its admin entry
	SystemCloud   string // its system-scoped admin entry (Ironic); default Cloud
	DevBinary     string // openstack-sync-dev, which serves the tier's Nautobot
	WorkDir       string // logs and state; kept after the run
}

func loadEnv() (env, []string) {
	e := env{
		Kubeconfig: os.Getenv("E2E_KUBECONFIG"), Helm: os.Getenv("E2E_HELM"),
		ShellOperator: os.Getenv("E2E_SHELL_OPERATOR"), HostBinary: os.Getenv("E2E_HOST_BINARY"),
		PluginsDir: os.Getenv("E2E_PLUGINS_DIR"), CloudsYAML: os.Getenv("E2E_CLOUDS_YAML"),
		Cloud: os.Getenv("E2E_CLOUD"), SystemCloud: os.Getenv("E2E_SYSTEM_CLOUD"), WorkDir: os.Getenv("E2E_WORK_DIR"),
		DevBinary: os.Getenv("E2E_DEV_BINARY"),
	}
	if e.SystemCloud == "" {
		e.SystemCloud = e.Cloud
	}
	var missing []string
	for name, v := range map[string]string{
		"E2E_KUBECONFIG": e.Kubeconfig, "E2E_HELM": e.Helm, "E2E_SHELL_OPERATOR": e.ShellOperator,
		"E2E_HOST_BINARY": e.HostBinary, "E2E_PLUGINS_DIR": e.PluginsDir, "E2E_CLOUDS_YAML": e.CloudsYAML,
		"E2E_CLOUD": e.Cloud, "E2E_DEV_BINARY": e.DevBinary,
	} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	return e, missing
}

// The suite shares one cluster, one release and one shell-operator; hk is set up by TestMain.
var (
	hk      *harness
	skipWhy string
)

func TestMain(m *testing.M) {
	e, missing := loadEnv()
	if len(missing) > 0 {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "e2e: CI=true but %s unset: run the tier through hack/e2e.sh\n", strings.Join(missing, ", "))
			os.Exit(1)
		}
		skipWhy = "not started by hack/e2e.sh (" + strings.Join(missing, ", ") + " unset)"
		os.Exit(m.Run())
	}
	var err error
	hk, err = newHarness(e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: set-up failed: %v\n", err)
		if hk != nil {
			hk.dumpLogs()
			hk.stopOperator()
			hk.nautobot.stop()
		}
		os.Exit(1)
	}
	code := m.Run()
	hk.stopOperator()
	hk.nautobot.stop()
	if code != 0 {
		hk.dumpLogs()
	}
	os.Exit(code)
}

// need returns the harness or skips: only outside CI, and only when hack/e2e.sh did not start it.
func need(t *testing.T) *harness {
	t.Helper()
	if hk == nil {
		t.Skip(skipWhy)
	}
	return hk
}

type harness struct {
	env        env
	namespace  string
	restConfig *rest.Config
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	// saKubeconfig authenticates as the chart's service account, so the chart's RBAC is what the
	// operator runs with.
	saKubeconfig string
	hooksDir     string
	values       string
	examples     *examples
	cloud        *cloud
	// nautobot serves the Nautobot the examples name (nil when none does).
	nautobot *nautobot

	mu sync.Mutex
	// listenPort is the running shell-operator's HTTP port (/metrics, /metrics/hooks).
	listenPort int
	operator   *exec.Cmd
	opDone     chan struct{}
	opLogs     []string
}

func newHarness(e env) (*harness, error) {
	if e.WorkDir == "" {
		d, err := os.MkdirTemp("", "openstack-sync-e2e-")
		if err != nil {
			return nil, err
		}
		e.WorkDir = d
	}
	if err := os.MkdirAll(e.WorkDir, 0o755); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("E2E_KUBECONFIG: %w", err)
	}
	// The test polls and reviews a lot; client-go's default 5 requests/s would dominate the run.
	cfg.QPS, cfg.Burst = 100, 200
	h := &harness{env: e, restConfig: cfg, namespace: "openstack-sync-e2e"}
	if h.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if h.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if _, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", h.namespace, err)
	}
	if h.examples, err = loadExamples("../../examples"); err != nil {
		return nil, err
	}
	if h.nautobot, err = startNautobot(e, h.examples); err != nil {
		return h, err
	}
	if h.cloud, err = newCloud(ctx, e.CloudsYAML, e.Cloud, e.SystemCloud); err != nil {
		return nil, err
	}
	if err := h.writeValues(); err != nil {
		return nil, err
	}
	// helm installs the CRDs from the chart's crds/, the service account and its Role; the
	// Deployment is stored but never runs (no kubelet): its pod spec is what we run below.
	if out, err := h.helm("install", release, chartDir, "--namespace", h.namespace, "--values", h.values); err != nil {
		return nil, fmt.Errorf("helm install: %v\n%s", err, out)
	}
	if err := h.waitCRDsEstablished(ctx); err != nil {
		return nil, err
	}
	if err := h.writeServiceAccountKubeconfig(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// writeValues pins the plugins built for this run, as an operator installing a release would:
// every module of the plugins directory, under the chart key its name gives (ironic-runbooks:
// ironicRunbooks), configured as a probe or a CR plugin as its metadata says.
func (h *harness) writeValues() error {
	modules, err := filepath.Glob(filepath.Join(h.env.PluginsDir, "*.wasm"))
	if err != nil || len(modules) == 0 {
		return fmt.Errorf("no plugin in %s (hack/build-plugins.sh builds them): %v", h.env.PluginsDir, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hostBinary: %s\nenv: {LOG_LEVEL: debug}\nplugins:\n", h.env.HostBinary)
	var data strings.Builder
	for _, path := range modules {
		info, err := h.inspect(path)
		if err != nil {
			return err
		}
		key := chartKey(strings.TrimSuffix(filepath.Base(path), ".wasm"))
		fmt.Fprintf(&b, "  %s: true\n", key)
		fmt.Fprintf(&data, "  %s:\n    plugin: {file: %s, sha256: %q}\n", key, path, info.SHA256)
		if info.Probe {
			fmt.Fprintf(&data, "    hook: {env: {DEFAULT_SECRET: %s, DEFAULT_CLOUD: %s}}\n", h.examples.secret.GetName(), h.examples.clouds[0])
		} else {
			// Short readiness retries: a broken cloud fails the run in seconds, not five minutes.
			site := ""
			if info.readsNautobot() && h.nautobot != nil {
				// The operator allow-lists the tier's Nautobot for the plugin that reads it.
				data.WriteString(h.nautobot.values())
				site = ", SITE: " + h.nautobot.site
			}
			fmt.Fprintf(&data, "    hook: {env: {PRUNE: true, READY_RETRIES: 3, READY_DELAY: 1%s}}\n", site)
		}
	}
	b.WriteString("pluginData:\n" + data.String())
	h.values = filepath.Join(h.env.WorkDir, "values.yaml")
	return os.WriteFile(h.values, []byte(b.String()), 0o644)
}

// moduleInfo is what `openstack-sync plugin inspect --json` says of a module that the harness needs.
type moduleInfo struct {
	SHA256  string `json:"sha256"`
	Probe   bool   `json:"probe"`
	Sources []struct {
		Name string `json:"name"`
	} `json:"sources"`
}

// readsNautobot: the module declares the source nautobot (docs/abi.md section 8).
func (m moduleInfo) readsNautobot() bool {
	for _, s := range m.Sources {
		if s.Name == "nautobot" {
			return true
		}
	}
	return false
}

// inspect asks the host binary under test what a module declares.
func (h *harness) inspect(path string) (moduleInfo, error) {
	out, err := exec.Command(h.env.HostBinary, "plugin", "inspect", "--json", path).Output()
	if err != nil {
		return moduleInfo{}, fmt.Errorf("openstack-sync plugin inspect %s: %w", path, err)
	}
	var info moduleInfo
	return info, json.Unmarshal(out, &info)
}

// chartKey is the chart's key of a plugin: its name in lower camel case.
func chartKey(name string) string {
	words := strings.Split(name, "-")
	for i := 1; i < len(words); i++ {
		if words[i] != "" {
			words[i] = strings.ToUpper(words[i][:1]) + words[i][1:]
		}
	}
	return strings.Join(words, "")
}

func (h *harness) helm(args ...string) (string, error) {
	cmd := exec.Command(h.env.Helm, append(args, "--kubeconfig", h.env.Kubeconfig)...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(h.env.WorkDir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.env.WorkDir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(h.env.WorkDir, "helm", "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (h *harness) waitCRDsEstablished(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, k := range kinds {
		for {
			_, err := h.dyn.Resource(k.gvr).Namespace(h.namespace).List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD for %s not served 30s after helm install: %w", k.kind, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// writeServiceAccountKubeconfig issues a token for the chart's service account (TokenRequest, as
// the kubelet would project it) and writes a kubeconfig that uses it.
func (h *harness) writeServiceAccountKubeconfig(ctx context.Context) error {
	sa := release + "-openstack-sync-operator"
	expiry := int64(3600)
	tok, err := h.kube.CoreV1().ServiceAccounts(h.namespace).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for service account %s: %w", sa, err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: %s, namespace: %s}}]
current-context: test
`, h.restConfig.Host, sa, tok.Status.Token, sa, h.namespace)
	h.saKubeconfig = filepath.Join(h.env.WorkDir, "sa-kubeconfig")
	return os.WriteFile(h.saKubeconfig, []byte(kc), 0o600)
}

// installedDeployment reads the Deployment helm stored for the release.
func (h *harness) installedDeployment(ctx context.Context) (*appsv1.Deployment, error) {
	return h.kube.AppsV1().Deployments(h.namespace).Get(ctx, release+"-openstack-sync-operator", metav1.GetOptions{})
}

// startOperator runs the real shell-operator the way the chart's pod would: the init container's
// script writes the hook wrappers (and checks the plugin digests), then shell-operator starts with
// the container's environment. Only paths that live in the image or in pod volumes are replaced.
func (h *harness) startOperator(ctx context.Context) error {
	d, err := h.installedDeployment(ctx)
	if err != nil {
		return err
	}
	spec := d.Spec.Template.Spec
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		return fmt.Errorf("the chart's pod has %d init containers and %d containers; want 1 and 1", len(spec.InitContainers), len(spec.Containers))
	}
	n := len(h.opLogs) + 1
	run := filepath.Join(h.env.WorkDir, fmt.Sprintf("operator-%d", n))
	h.hooksDir = filepath.Join(run, "hooks")
	for _, dir := range []string{h.hooksDir, filepath.Join(run, "tmp"), filepath.Join(h.env.WorkDir, "wasm-cache")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	local := map[string]string{
		"HOOKS_DIR":                     h.hooksDir,
		"SHELL_OPERATOR_HOOKS_DIR":      h.hooksDir,
		"SHELL_OPERATOR_TMP_DIR":        filepath.Join(run, "tmp"),
		"DEBUG_UNIX_SOCKET":             filepath.Join(run, "debug.socket"),
		"OPENSTACK_SYNC_CACHE_DIR":      filepath.Join(h.env.WorkDir, "wasm-cache"),
		"POD_NAMESPACE":                 h.namespace,
		"KUBECONFIG":                    h.saKubeconfig,
		"KUBE_CONFIG":                   h.saKubeconfig,
		"SHELL_OPERATOR_LISTEN_ADDRESS": "127.0.0.1",
	}
	init := spec.InitContainers[0]
	initCmd := exec.CommandContext(ctx, init.Command[0], append(init.Command[1:], init.Args...)...)
	initCmd.Env = containerEnv(init, local)
	if out, err := initCmd.CombinedOutput(); err != nil {
		return fmt.Errorf("init container %s failed: %v\n%s", init.Name, err, out)
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	local["SHELL_OPERATOR_LISTEN_PORT"] = strconv.Itoa(port)
	h.mu.Lock()
	h.listenPort = port
	h.mu.Unlock()
	c := spec.Containers[0]
	logPath := filepath.Join(h.env.WorkDir, fmt.Sprintf("shell-operator-%d.log", n))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(h.env.ShellOperator, "start")
	cmd.Env = containerEnv(c, local)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A test binary killed by its -timeout runs no clean-up: the operator must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start shell-operator: %w", err)
	}
	// hack/e2e.sh's trap stops it by this pid too, whatever happened to the test binary.
	if err := os.WriteFile(filepath.Join(h.env.WorkDir, "shell-operator.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	h.mu.Lock()
	h.operator, h.opDone = cmd, done
	h.opLogs = append(h.opLogs, logPath)
	h.mu.Unlock()
	return nil
}

// containerEnv is a container's literal env plus the pod-level values the kubelet would supply,
// over nothing but PATH and HOME: the host must need nothing the chart does not give it.
func containerEnv(c corev1.Container, local map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	seen := map[string]bool{}
	for _, e := range c.Env {
		v, ok := local[e.Name]
		if !ok {
			if e.ValueFrom != nil {
				continue
			}
			v = e.Value
		}
		seen[e.Name] = true
		out = append(out, e.Name+"="+v)
	}
	for k, v := range local {
		if !seen[k] {
			out = append(out, k+"="+v)
		}
	}
	return out
}

func (h *harness) stopOperator() {
	h.mu.Lock()
	cmd, done := h.operator, h.opDone
	h.operator, h.opDone = nil, nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// operatorLog is the current shell-operator's log so far.
func (h *harness) operatorLog() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.opLogs) == 0 {
		return ""
	}
	b, _ := os.ReadFile(h.opLogs[len(h.opLogs)-1])
	return string(b)
}

// dumpLogs prints the tail of every shell-operator log of the run.
func (h *harness) dumpLogs() {
	for _, p := range h.opLogs {
		fmt.Fprintf(os.Stderr, "==== last lines of %s\n%s\n", p, tail(p, 60))
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		// shell-operator's error lines carry whole goroutine dumps; the message is at the front.
		if len(line) > 600 {
			line = line[:600] + "..."
		}
		lines = append(lines, line)
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// yamlDocs splits a multi-document YAML file into JSON-ready objects.
func yamlDocs(body []byte) ([]map[string]any, error) {
	var out []map[string]any
	for _, doc := range bytes.Split(body, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// operatorExited reports whether the current shell-operator process has ended.
func (h *harness) operatorExited() bool {
	h.mu.Lock()
	done := h.opDone
	h.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}
