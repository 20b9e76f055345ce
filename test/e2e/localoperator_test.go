//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/test/docplugins"
)

// TestShellOperatorOnYourMachine runs writing-plugins.md's "shell-operator on your machine" step
// as written: its first block (CRD, credentials Secret, hook wrapper, the chart's variables,
// shell-operator start) in the background and its second (apply example.yaml, wait for Ready,
// read the status, delete) beside it, in the folder of the plugin `plugin new
// neutron-address-scopes` makes, against the test API server and the real Neutron. The reader's
// clouds.yaml is the harness's, its admin entry named mycloud as example.yaml says.
func TestShellOperatorOnYourMachine(t *testing.T) {
	h := need(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	blocks, err := docplugins.ShellBlocks(root, "docs/writing-plugins.md", "(make e2e runs this block)")
	require.NoError(t, err)
	require.Len(t, blocks, 2, "the page's two terminals")

	work := t.TempDir()
	wasm := buildScaffold(t, h.env.HostBinary, root, work, "neutron-address-scopes")
	dir := filepath.Dir(wasm)
	body, err := os.ReadFile(wasm)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugin.wasm"), body, 0o644)) // the page's build (step 3)
	clouds, err := os.ReadFile(h.env.CloudsYAML)
	require.NoError(t, err)
	renamed := strings.Replace(string(clouds), "\n  "+h.env.Cloud+":", "\n  mycloud:", 1)
	require.NotEqual(t, string(clouds), renamed, "%s has cloud %s", h.env.CloudsYAML, h.env.Cloud)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clouds.yaml"), []byte(renamed), 0o600))

	// The reader's PATH: the host binary, shell-operator and kubectl by their names.
	tools := filepath.Join(work, "tools")
	require.NoError(t, os.MkdirAll(tools, 0o755))
	kubectl := filepath.Join(filepath.Dir(h.env.Helm), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		kubectl, err = exec.LookPath("kubectl")
		require.NoError(t, err, "kubectl is neither beside helm nor on PATH")
	}
	for name, target := range map[string]string{"openstack-sync": h.env.HostBinary, "shell-operator": h.env.ShellOperator, "kubectl": kubectl} {
		require.NoError(t, os.Symlink(target, filepath.Join(tools, name)))
	}
	port, err := freePort()
	require.NoError(t, err)
	env := append(os.Environ(), "PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+h.env.Kubeconfig,
		"SHELL_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "SHELL_OPERATOR_LISTEN_PORT="+strconv.Itoa(port),
		"OPENSTACK_SYNC_CACHE_DIR="+filepath.Join(work, "cache"))
	script := func(lines []string) string {
		return "set -euxo pipefail\n" + strings.Join(lines, "\n") + "\n"
	}
	t.Cleanup(func() {
		// Whatever a failure left: the CR (without the finalizer no operator will release), the
		// Secret, the CRD, and the address scope example.yaml names (oss-blue: the name prefix).
		kc := func(args ...string) {
			_ = exec.Command(kubectl, append([]string{"--kubeconfig", h.env.Kubeconfig}, args...)...).Run()
		}
		kc("patch", "-f", filepath.Join(dir, "example.yaml"), "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		kc("delete", "--ignore-not-found", "--wait=false", "-f", filepath.Join(dir, "example.yaml"))
		kc("delete", "--ignore-not-found", "-n", "default", "secret", "openstack-credentials")
		kc("delete", "--ignore-not-found", "--wait=false", "-f", filepath.Join(dir, "crd.yaml"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if left, err := h.cloud.one(ctx, "address-scopes", "address_scopes", "oss-blue"); err == nil && left != nil {
			_, _ = h.cloud.network.Delete(ctx, h.cloud.network.ServiceURL("address-scopes", fmt.Sprint(left["id"])), nil)
			t.Errorf("address scope %v was left behind (deleted now)", left["id"])
		}
	})

	// Terminal 1. Its last command runs by exec, so the shell is shell-operator and the test's
	// parent-death signal reaches it even if the test binary is killed.
	first := append([]string{}, blocks[0]...)
	last := strings.TrimSpace(first[len(first)-1])
	require.Equal(t, "shell-operator start", last, "terminal 1 ends by starting shell-operator")
	first[len(first)-1] = "exec " + last
	logPath := filepath.Join(h.env.WorkDir, "local-shell-operator.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	op := exec.Command("bash", "-c", script(first))
	op.Dir, op.Env, op.Stdout, op.Stderr = dir, env, logFile, logFile
	op.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	require.NoError(t, op.Start())
	exited := make(chan struct{})
	go func() { _ = op.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-op.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-op.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	// shell-operator listens once it has started; the CRD was applied before it.
	deadline := time.Now().Add(90 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("terminal 1 ended:\n%s", tail(logPath, 60))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("shell-operator not listening after 90 s:\n%s", tail(logPath, 60))
		}
		time.Sleep(300 * time.Millisecond)
	}

	// Terminal 2.
	second := exec.Command("bash", "-c", script(blocks[1]))
	second.Dir, second.Env = dir, env
	out, err := second.CombinedOutput()
	require.NoError(t, err, "terminal 2:\n%s\nshell-operator:\n%s", out, tail(logPath, 80))
	m := regexp.MustCompile(`(?m)^([0-9a-f-]{36}) Synced$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "the status names the address scope and Synced:\n%s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	scope, err := get(ctx, h.cloud.network, h.cloud.network.ServiceURL("address-scopes", m[1]))
	require.NoError(t, err)
	assert.Nil(t, scope, "kubectl delete returned once the hook had deleted address scope %s", m[1])
	assert.Contains(t, tail(logPath, 400), "neutron-address-scopes", "the hook ran under the local shell-operator")
}
