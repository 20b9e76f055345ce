//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// chartRelease is one more installation of the chart, in its own namespace, with the ironic-runbooks
// plugin only; its operators are run like the suite's (the chart's init script, then shell-operator
// with the container's environment), one per simulated pod.
type chartRelease struct {
	h                    *harness
	name, namespace      string
	fullname, kubeconfig string
	pods                 []*pod
	// podPaths maps paths of the pod's volumes that the chart's init script names literally to
	// directories of this run (the OCI pull's target on the cache volume).
	podPaths map[string]string
}

// pod is one shell-operator process standing for a pod of the release's Deployment.
type pod struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// installRelease installs the chart as release name into a new namespace, with the ironic-runbooks
// plugin built for this run; extra is YAML appended to the values (replicaCount, ha, shard, ...).
func (h *harness) installRelease(t *testing.T, ctx context.Context, name, namespace, extra string) *chartRelease {
	t.Helper()
	file := filepath.Join(h.env.PluginsDir, "ironic-runbooks.wasm")
	body, err := os.ReadFile(file)
	require.NoError(t, err)
	sum := sha256.Sum256(body)
	return h.installReleaseValues(t, ctx, name, namespace, fmt.Sprintf(`hostBinary: %s
plugins: {ironicRunbooks: true}
pluginData:
  ironicRunbooks:
    plugin: {file: %s, sha256: %q}
    hook: {env: {PRUNE: true, READY_RETRIES: 3, READY_DELAY: 1}}
%s`, h.env.HostBinary, file, hex.EncodeToString(sum[:]), extra))
}

// installReleaseValues installs the chart with values (plus debug logging) into a new namespace
// holding the examples' credentials Secret, and writes a kubeconfig of the release's service account.
func (h *harness) installReleaseValues(t *testing.T, ctx context.Context, name, namespace, values string) *chartRelease {
	t.Helper()
	r := &chartRelease{h: h, name: name, namespace: namespace, fullname: name + "-openstack-sync-operator"}
	_, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	values = "env: {LOG_LEVEL: debug}\n" + values
	path := filepath.Join(h.env.WorkDir, name+"-values.yaml")
	require.NoError(t, os.WriteFile(path, []byte(values), 0o644))
	out, err := h.helm("install", name, chartDir, "--namespace", namespace, "--values", path)
	require.NoError(t, err, "helm install %s:\n%s", name, out)

	expiry := int64(3600)
	tok, err := h.kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, r.fullname,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	require.NoError(t, err)
	r.kubeconfig = filepath.Join(h.env.WorkDir, name+"-sa-kubeconfig")
	require.NoError(t, os.WriteFile(r.kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: sa, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: sa, namespace: %s}}]
current-context: test
`, h.restConfig.Host, tok.Status.Token, namespace)), 0o600))

	// The examples' credentials Secret, pointing at the real cloud.
	secret, err := secretCloudsYAML(h.env.CloudsYAML, h.examples.clouds, "")
	require.NoError(t, err)
	_, err = h.dyn.Resource(secretsGVR).Namespace(namespace).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": h.examples.secret.GetName(), "namespace": namespace},
		"data":     map[string]any{"clouds.yaml": base64.StdEncoding.EncodeToString(secret)},
	}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) { // another release in the namespace made it
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		r.killAll()
		if out, err := h.helm("uninstall", name, "--namespace", namespace); err != nil {
			t.Logf("helm uninstall %s: %v\n%s", name, err, out)
		}
		if t.Failed() {
			for _, p := range r.pods {
				fmt.Fprintf(os.Stderr, "==== last lines of %s\n%s\n", p.log, tail(p.log, 80))
			}
		}
	})
	return r
}

// start runs one pod of the release: the chart's init container script, then shell-operator with
// the container's environment and the downward-API values of a pod named podName. The pod gets
// its own process group, so kill takes its hook processes down with it, as a node losing the pod
// would.
func (r *chartRelease) start(t *testing.T, ctx context.Context, podName string) *pod {
	t.Helper()
	d, err := r.h.kube.AppsV1().Deployments(r.namespace).Get(ctx, r.fullname, metav1.GetOptions{})
	require.NoError(t, err)
	spec := d.Spec.Template.Spec
	dir := filepath.Join(r.h.env.WorkDir, r.name+"-"+podName)
	hooks := filepath.Join(dir, "hooks")
	for _, p := range []string{hooks, filepath.Join(dir, "tmp")} {
		require.NoError(t, os.MkdirAll(p, 0o755))
	}
	port, err := freePort()
	require.NoError(t, err)
	local := map[string]string{
		"HOOKS_DIR": hooks, "SHELL_OPERATOR_HOOKS_DIR": hooks,
		"SHELL_OPERATOR_TMP_DIR": filepath.Join(dir, "tmp"), "DEBUG_UNIX_SOCKET": filepath.Join(dir, "debug.socket"),
		"OPENSTACK_SYNC_CACHE_DIR": filepath.Join(r.h.env.WorkDir, "wasm-cache"),
		// The downward API: the pod's namespace and name.
		"POD_NAMESPACE": r.namespace, "OPENSTACK_SYNC_LEASE_NAMESPACE": r.namespace, "OPENSTACK_SYNC_LEASE_HOLDER": podName,
		"KUBECONFIG": r.kubeconfig, "KUBE_CONFIG": r.kubeconfig,
		"SHELL_OPERATOR_LISTEN_ADDRESS": "127.0.0.1", "SHELL_OPERATOR_LISTEN_PORT": strconv.Itoa(port),
	}
	init := spec.InitContainers[0]
	argv := append(append([]string{}, init.Command...), init.Args...)
	for i := range argv {
		for from, to := range r.podPaths {
			argv[i] = strings.ReplaceAll(argv[i], from, to)
		}
	}
	initCmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	initCmd.Env = containerEnv(init, local)
	out, err := initCmd.CombinedOutput()
	require.NoError(t, err, "init container:\n%s", out)

	p := &pod{name: podName, done: make(chan struct{}), log: filepath.Join(r.h.env.WorkDir, r.name+"-"+podName+".log")}
	logFile, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd = exec.Command(r.h.env.ShellOperator, "start")
	p.cmd.Env = containerEnv(spec.Containers[0], local)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); logFile.Close(); close(p.done) }()
	r.pods = append(r.pods, p)
	return p
}

// kill ends the pod at once, hooks included (SIGKILL to its process group), and returns when it
// is gone.
func (p *pod) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (r *chartRelease) killAll() {
	for _, p := range r.pods {
		p.kill()
	}
}

// hookLine is one line the host wrote in a hook run, as shell-operator logged it.
type hookLine struct {
	Msg, Level, Binding string
	Time                time.Time
	raw                 map[string]any
}

// hookLines reads the host's lines of the pod's shell-operator log.
func (p *pod) hookLines(t *testing.T) []hookLine {
	t.Helper()
	f, err := os.Open(p.log)
	require.NoError(t, err)
	defer f.Close()
	var out []hookLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec["proxyJsonLog"] != true {
			continue
		}
		l := hookLine{raw: rec}
		l.Msg, _ = rec["msg"].(string)
		l.Level, _ = rec["level"].(string)
		l.Binding, _ = rec["binding"].(string)
		ts, _ := rec["time"].(string)
		l.Time, _ = time.Parse(time.RFC3339, ts)
		out = append(out, l)
	}
	return out
}

// acted is when the pod's hook runs acted on CRs (a run's "Found N ... to reconcile" line).
func (p *pod) acted(t *testing.T) []time.Time {
	var out []time.Time
	for _, l := range p.hookLines(t) {
		if strings.HasPrefix(l.Msg, "Found ") && strings.Contains(l.Msg, " to reconcile") {
			out = append(out, l.Time)
		}
	}
	return out
}

// lines returns the times of the pod's host lines whose message starts with prefix.
func (p *pod) lines(t *testing.T, prefix string) []time.Time {
	var out []time.Time
	for _, l := range p.hookLines(t) {
		if strings.HasPrefix(l.Msg, prefix) {
			out = append(out, l.Time)
		}
	}
	return out
}
