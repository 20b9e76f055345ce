//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// e2ePrefixes are the Nautobot prefixes the subnet pool scenarios reference besides the
// example's (examples/nautobot/seed.yaml): the adopted pool's CIDR (TestLifecycle) and the
// taken-over pool's (TestTakeover). Unique to this tier, as the pools are in the shared cloud.
var e2ePrefixes = []map[string]any{
	{"id": "e2e0b0a7-0000-4000-8000-000000000001", "prefix": "10.251.200.0/24", "type": "pool",
		"tags": []string{"openstack-subnet-pool"}, "locations": []string{"iad3-dev"}},
	{"id": tkoPrefixID, "prefix": "10.251.210.0/24", "type": "pool", "locations": []string{"iad3-dev"}},
}

// tkoPrefixID is the Nautobot prefix of the pool TestTakeover takes over (TKO-POOL-KEEP).
const tkoPrefixID = "e2e0b0a7-0000-4000-8000-000000000002"

// nautobot is the tier's Nautobot: `openstack-sync-dev nautobot` on loopback (the fake built from
// Nautobot's published API, host/internal/fakenautobot), serving the examples' seed and
// e2ePrefixes. Its token is the run's own, in a file and in the Secret the example CR names; the
// hook reads it from the Secret, as in a cluster.
type nautobot struct {
	url, token, site string
	cmd              *exec.Cmd
	done             chan struct{}
}

// startNautobot starts it when an example CR names a Nautobot (spec.nautobot) and points that CR
// at it; nil when none does.
func startNautobot(e env, ex *examples) (*nautobot, error) {
	var specs []map[string]any
	for _, cr := range ex.crs {
		if nb, _, _ := unstructured.NestedMap(cr.Object, "spec", "nautobot"); nb != nil {
			specs = append(specs, cr.Object)
		}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	if e.DevBinary == "" {
		return nil, fmt.Errorf("an example CR names a Nautobot, and E2E_DEV_BINARY (openstack-sync-dev, which serves one) is unset")
	}
	raw, err := os.ReadFile("../../examples/nautobot/seed.yaml")
	if err != nil {
		return nil, err
	}
	var seed map[string]any
	if err := yaml.Unmarshal(raw, &seed); err != nil {
		return nil, fmt.Errorf("examples/nautobot/seed.yaml: %w", err)
	}
	prefixes, _ := seed["prefixes"].([]any)
	for _, p := range e2ePrefixes {
		prefixes = append(prefixes, p)
	}
	seed["prefixes"] = prefixes
	seedFile := filepath.Join(e.WorkDir, "nautobot-seed.json")
	body, _ := json.Marshal(seed)
	if err := os.WriteFile(seedFile, body, 0o644); err != nil {
		return nil, err
	}
	tok := make([]byte, 20)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	n := &nautobot{token: hex.EncodeToString(tok), done: make(chan struct{})}
	n.site, _ = seed["site"].(string)
	tokenFile := filepath.Join(e.WorkDir, "nautobot-token")
	if err := os.WriteFile(tokenFile, []byte(n.token), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(e.WorkDir, "nautobot.log"))
	if err != nil {
		return nil, err
	}
	n.cmd = exec.Command(e.DevBinary, "nautobot", "--seed", seedFile, "--token-file", tokenFile)
	n.cmd.Stderr = logFile
	// A test binary killed by its -timeout runs no clean-up: Nautobot must not outlive it.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := n.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start openstack-sync-dev nautobot: %w", err)
	}
	go func() { _ = n.cmd.Wait(); logFile.Close(); close(n.done) }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n.url = <-line:
	case <-time.After(30 * time.Second):
	}
	if !strings.HasPrefix(n.url, "http://127.0.0.1:") {
		n.stop()
		return nil, fmt.Errorf("openstack-sync-dev nautobot printed no loopback URL (%q); see nautobot.log", n.url)
	}
	for _, obj := range specs {
		if err := unstructured.SetNestedField(obj, n.url, "spec", "nautobot", "url"); err != nil {
			n.stop()
			return nil, err
		}
	}
	return n, nil
}

func (n *nautobot) stop() {
	if n == nil || n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Signal(os.Interrupt)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
}

// values are the chart values of a plugin that reads Nautobot: the operator's allow-list and the
// site a CR's location defaults to.
func (n *nautobot) values() string {
	return fmt.Sprintf("    sources: [{name: nautobot, url: %q}]\n", n.url)
}

// applyTokenSecrets creates, in the test namespace, each Secret an example CR names for its
// Nautobot token, holding the run's token.
func (h *harness) applyTokenSecrets(t *testing.T, ctx context.Context) {
	t.Helper()
	if h.nautobot == nil {
		return
	}
	for _, cr := range h.examples.crs {
		name, _, _ := unstructured.NestedString(cr.Object, "spec", "nautobot", "tokenSecretRef", "secretName")
		key, _, _ := unstructured.NestedString(cr.Object, "spec", "nautobot", "tokenSecretRef", "key")
		if name == "" || key == "" {
			continue
		}
		s := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]any{"name": name, "namespace": h.namespace},
			"stringData": map[string]any{key: h.nautobot.token},
		}}
		_, err := h.dyn.Resource(secretsGVR).Namespace(h.namespace).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err, "create Secret %s", name)
	}
}
