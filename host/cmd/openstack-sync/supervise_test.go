package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
	"github.com/openstack-sync/openstack-sync/host/internal/supervise"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// The test binary is the host: with asHostEnv set, TestMain runs main() instead of the tests, so
// a hook process (and the child its supervisor re-executes from os.Executable) is this very code.
const (
	asHostEnv = "OPENSTACK_SYNC_TEST_AS_HOST"
	// childMarkEnv names a file the supervised child creates, so a test can tell a child ran.
	childMarkEnv = "OPENSTACK_SYNC_TEST_CHILD_MARK"
)

func TestMain(m *testing.M) {
	if os.Getenv(asHostEnv) == "1" {
		if mark := os.Getenv(childMarkEnv); mark != "" && os.Getenv(supervise.EnvChild) != "" {
			_ = os.WriteFile(mark, []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		main()
	}
	os.Exit(m.Run())
}

var mocks = fakekube.Resource{Group: "mock.openstack-sync.io", Version: "v1alpha1", Plural: "mocks", Kind: "Mock",
	StatusSubresource: true}

// hookFixture is a fake API server holding Mock CRs and their credentials, an in-process cloud,
// and a Synchronization binding context over the CRs, for whole hook processes.
type hookFixture struct {
	kube  *fakekube.Server
	cloud *fakecloud.Cloud
	dir   string
	env   []string
}

func newHookFixture(t *testing.T, cacheDir string, crs map[string]map[string]any) *hookFixture {
	t.Helper()
	kube, err := fakekube.Start(mocks)
	require.NoError(t, err)
	t.Cleanup(kube.Close)
	cloud := fakecloud.New(fakecloud.Options{})
	t.Cleanup(cloud.Close)
	require.NoError(t, cloud.AddCollection(fakecloud.Collection{Path: "v2.0/things", Key: "thing"}))
	_, err = kube.Create(fakekube.SecretResource, "ns", fakekube.Object{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "s1", "namespace": "ns"},
		"stringData": map[string]any{"clouds.yaml": cloud.CloudsYAML()}})
	require.NoError(t, err)
	var objects []any
	for name, spec := range crs {
		spec["name"] = name
		spec["cloudCredentialsRef"] = map[string]any{"secretName": "s1", "cloudName": fakecloud.AdminCloud}
		obj, err := kube.Create(mocks, "ns", fakekube.Object{"apiVersion": mocks.APIVersion(), "kind": "Mock",
			"metadata": map[string]any{"name": name, "namespace": "ns"}, "spec": spec})
		require.NoError(t, err)
		objects = append(objects, obj)
	}
	dir := t.TempDir()
	// A scheduled full run: its failures exit 1 (a start-up Synchronization's exit 0, Decision 20).
	bc, err := json.Marshal([]any{map[string]any{"binding": "periodic sync", "type": "Schedule",
		"snapshots": map[string]any{"mocks": objects}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "binding-context.json"), bc, 0o600))
	require.NoError(t, kube.WriteKubeconfig(filepath.Join(dir, "kubeconfig")))
	f := &hookFixture{kube: kube, cloud: cloud, dir: dir}
	f.env = []string{asHostEnv + "=1", "HOME=" + dir, "PATH=" + os.Getenv("PATH"), "LOG_LEVEL=info",
		"POD_NAMESPACE=ns", "KUBECONFIG=" + filepath.Join(dir, "kubeconfig"),
		"BINDING_CONTEXT_PATH=" + filepath.Join(dir, "binding-context.json"),
		"OPENSTACK_SYNC_CACHE_DIR=" + cacheDir, childMarkEnv + "=" + filepath.Join(dir, "child-ran"),
		"MOCK_ENABLED=true", "MOCK_CRD_API_VERSION=" + mocks.APIVersion(), "MOCK_CRD_KIND=Mock",
		"MOCK_CRD_RESOURCE=mocks." + mocks.Group, "MOCK_STATUS_ENABLED=true", "MOCK_PRUNE=true",
		"MOCK_READY_RETRIES=1", "MOCK_READY_DELAY=0",
		"OPENSTACK_SYNC_WASM_CALL_TIMEOUT=1s"}
	return f
}

// command is a hook process of the host under test.
func (f *hookFixture) command(t *testing.T, plugin string, extraEnv []string, args ...string) (*exec.Cmd, *wasmtest.LogBuffer) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, append([]string{"hook", "--plugin", plugin}, args...)...)
	cmd.Env = append(append([]string{}, f.env...), extraEnv...)
	// A LogBuffer: readable while the process still writes, so that a test giving up on it can
	// show what it said.
	out := &wasmtest.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, out
}

// processLimit bounds every hook process of these tests. The slowest (a spin in _initialize,
// killed at its deadline and run again with the checks) takes about 25 s on a loaded machine,
// most of it two cold compilations; a process past the limit is a bug this package must report
// with its output and its processes' state, not by hanging until go test's own timeout.
const processLimit = 3 * time.Minute

// hookProcess is a started hook process in a process group of its own, so that a test that
// gives up on it ends its supervised child with it: a child left running would hold the
// output pipe open, and Wait with it.
type hookProcess struct {
	cmd  *exec.Cmd
	out  *wasmtest.LogBuffer
	done chan error
}

func start(t *testing.T, cmd *exec.Cmd, out *wasmtest.LogBuffer) *hookProcess {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The output is a pipe the test copies from: Wait must not outlive the process for a
	// descendant that still holds it.
	cmd.WaitDelay = 10 * time.Second
	require.NoError(t, cmd.Start())
	p := &hookProcess{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.done <- nil // a wait after the cleanup's returns at once
	})
	return p
}

// wait returns the process's outcome, failing the test with the output and a snapshot of the
// process group when it does not end within limit.
func (p *hookProcess) wait(t *testing.T, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(limit):
	}
	pgid := strconv.Itoa(p.cmd.Process.Pid)
	all, _ := exec.Command("ps", "-e", "-o", "pgid,pid,ppid,stat,wchan:32,etime,time,args").CombinedOutput()
	var group []string
	for i, line := range strings.Split(string(all), "\n") {
		if f := strings.Fields(line); i == 0 || len(f) > 0 && f[0] == pgid {
			group = append(group, line)
		}
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	t.Fatalf("the hook process did not end within %s; its process group then:\n%s\nits output:\n%s", limit,
		strings.Join(group, "\n"), p.out)
	return nil
}

// runHook starts cmd and waits for it within processLimit.
func runHook(t *testing.T, cmd *exec.Cmd, out *wasmtest.LogBuffer) error {
	t.Helper()
	return start(t, cmd, out).wait(t, processLimit)
}

func (f *hookFixture) ready(t *testing.T, name string) map[string]any {
	obj, err := f.kube.Get(mocks, "ns", name)
	require.NoError(t, err)
	st, _ := obj["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	if len(conds) == 0 {
		return nil
	}
	c, _ := conds[0].(map[string]any)
	return c
}

func (f *hookFixture) childRan() bool {
	_, err := os.Stat(filepath.Join(f.dir, "child-ran"))
	return err == nil
}

func mockGuest(t *testing.T, name string) string {
	return wasmtest.BuildGuest(t, "../../internal/wasm/testdata/guests", name, "../../../pdk")
}

// A guest that spins without calling the host runs, by default, without termination checks in
// the supervised child: the supervisor kills the child past the call's deadline and the pass
// runs again in-process with the checks on, which gives today's contained outcome (the spinning
// CR failed with a timeout, its neighbours reconciled, the prune skipped, exit 1). The overrun is
// remembered, so the next run of the module starts with the checks on.
func TestASpinningGuestIsStoppedByTheSupervisor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole hook processes that wait for call deadlines")
	}
	pdkmock, initloop := mockGuest(t, "pdkmock"), mockGuest(t, "initloop")
	cacheDir := t.TempDir()
	cases := []struct {
		name   string
		plugin string
		env    []string
		entry  []string
		// timeout is the call's deadline; the overrun line says how much of it was left when
		// the guest code began, a few milliseconds less on a loaded machine.
		timeout time.Duration
		code    int
		rerun   bool
		outcome func(t *testing.T, f *hookFixture, out string)
	}{
		{name: "spinning in reconcile", plugin: pdkmock, entry: []string{"entry=reconcile", "cr=ns/a-spin"}, timeout: time.Second, code: 1, rerun: true,
			outcome: func(t *testing.T, f *hookFixture, out string) {
				bad := f.ready(t, "a-spin")
				require.NotNil(t, bad, "the spinning CR has a status")
				assert.Equal(t, "False", bad["status"])
				assert.Contains(t, bad["message"], `wasm plugin "mock" reconcile: timeout: did not finish within 1s`)
				for _, good := range []string{"b-good", "c-good"} {
					c := f.ready(t, good)
					require.NotNil(t, c, good)
					assert.Equal(t, "True", c["status"], "%s is reconciled", good)
				}
				assert.Contains(t, out, runner.MsgSkippingPrune)
				assert.NotContains(t, out, "prune: ", "the guest's prune never ran")
			}},
		{name: "the module that overran starts with the checks", plugin: pdkmock, code: 1,
			outcome: func(t *testing.T, f *hookFixture, out string) {
				assert.Contains(t, out, "termination checks on for this module")
				assert.Contains(t, f.ready(t, "a-spin")["message"], "timeout: did not finish within 1s")
				assert.Equal(t, "True", f.ready(t, "b-good")["status"])
			}},
		{name: "checks chosen by the operator", plugin: pdkmock, env: []string{supervise.EnvTermination + "=checks"},
			code: 1, outcome: func(t *testing.T, f *hookFixture, out string) {
				assert.False(t, f.childRan(), "no child process")
				assert.Contains(t, f.ready(t, "a-spin")["message"], "timeout: did not finish within 1s")
			}},
		{name: "spinning in _initialize", plugin: initloop, entry: []string{"plugin=initloop entry=_initialize"}, timeout: 10 * time.Second, code: 1, rerun: true,
			outcome: func(t *testing.T, f *hookFixture, out string) {
				assert.Contains(t, out, `initloop\" _initialize: timeout: did not finish within 10s`,
					"the rerun stops the start at its deadline, and names the deadline a start gets")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newHookFixture(t, cacheDir, map[string]map[string]any{
				"a-spin": {"action": "loop"}, "b-good": {}, "c-good": {}})
			cmd, out := f.command(t, c.plugin, c.env)
			begin := time.Now()
			err := runHook(t, cmd, out)
			took := time.Since(begin)
			t.Logf("took %s\n%s", took, out)
			require.Error(t, err)
			assert.Equal(t, c.code, cmd.ProcessState.ExitCode())
			if c.rerun {
				assert.True(t, f.childRan())
				assert.Contains(t, out.String(), "plugin call overran its deadline; the hook process was killed and the pass "+
					"runs again in-process with termination checks")
				for _, attr := range c.entry {
					assert.Contains(t, out.String(), attr)
				}
				m := regexp.MustCompile(`overran its deadline; .* timeout=(\S+)`).FindStringSubmatch(out.String())
				require.NotNil(t, m, "the overrun line names the call's timeout")
				left, err := time.ParseDuration(m[1])
				require.NoError(t, err)
				assert.True(t, left <= c.timeout && left > c.timeout-c.timeout/10, "timeout=%s for a %s deadline", left, c.timeout)
				assert.Contains(t, out.String(), "later runs of this module keep termination checks on")
			} else {
				assert.NotContains(t, out.String(), "overran its deadline")
			}
			c.outcome(t, f, out.String())
		})
	}
}

// The pass the supervisor runs again after a kill resumes: the CRs the child finished are not
// reconciled again (a-good's thing is read once, by the child), the CR it was killed in is (the
// checks stop it at its deadline), and the run's time budget keeps counting from the run's start,
// so a budget the kill and the rerun's timeout spend leaves c-good for the next run.
func TestTheSupervisorsRerunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole hook processes that wait for call deadlines")
	}
	pdkmock := mockGuest(t, "pdkmock")
	cacheDir := t.TempDir()
	reads := func(f *hookFixture, name string) int {
		n := 0
		for _, r := range f.cloud.Requests() {
			if r.Method == "GET" && strings.HasSuffix(r.Path, "/things/"+name) {
				n++
			}
		}
		return n
	}
	crs := func() map[string]map[string]any {
		return map[string]map[string]any{"a-good": {}, "b-spin": {"action": "loop"}, "c-good": {}}
	}

	t.Run("finished CRs are not reconciled again", func(t *testing.T) {
		f := newHookFixture(t, cacheDir, crs())
		cmd, out := f.command(t, pdkmock, nil)
		err := runHook(t, cmd, out)
		t.Log(out)
		require.Error(t, err)
		assert.Contains(t, out.String(), "the pass runs again in-process with termination checks")
		assert.Equal(t, 1, reads(f, "a-good"), "a-good was reconciled by the child only")
		assert.Equal(t, "True", f.ready(t, "a-good")["status"])
		assert.Contains(t, f.ready(t, "b-spin")["message"], "timeout: did not finish within 1s")
		assert.Equal(t, "True", f.ready(t, "c-good")["status"])
	})

	t.Run("the run's budget keeps counting", func(t *testing.T) {
		require.NoError(t, os.RemoveAll(filepath.Join(cacheDir, "overrun")), "the module runs without the checks again")
		f := newHookFixture(t, cacheDir, crs())
		cmd, out := f.command(t, pdkmock, []string{"OPENSTACK_SYNC_WASM_CALL_TIMEOUT=2s", "MOCK_RUN_BUDGET=4"})
		err := runHook(t, cmd, out)
		t.Log(out)
		require.Error(t, err)
		assert.Contains(t, out.String(), "the pass runs again in-process with termination checks")
		assert.Contains(t, out.String(), "Stopping the run: its time budget is spent")
		// b-spin is run again (and times out) only when the machine left budget for it; c-good,
		// after it, never is: a budget started again would have reconciled both.
		assert.Nil(t, f.ready(t, "c-good"), "the kill, the grace and the rerun's timeout spent the budget before c-good")
	})
}

// childOf waits for the supervised child of pid and returns its pid.
func childOf(t *testing.T, pid int) int {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			if fields := strings.Fields(string(b)); len(fields) > 0 {
				child, err := strconv.Atoi(fields[0])
				require.NoError(t, err)
				return child
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the supervisor started no child within 30s")
	return 0
}

// The supervisor is transparent for everything but an overrun: a signal it gets reaches the
// child, a child that dies on its own is reported and not run again, and --config never forks.
func TestTheSupervisorPassesThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole hook processes")
	}
	pdkmock := mockGuest(t, "pdkmock")
	cacheDir := t.TempDir()

	t.Run("--config answers in one process", func(t *testing.T) {
		f := newHookFixture(t, cacheDir, nil)
		cmd, out := f.command(t, pdkmock, nil, "--config")
		var stdout strings.Builder
		cmd.Stdout = &stdout
		require.NoError(t, runHook(t, cmd, out), out.String())
		assert.Contains(t, stdout.String(), `"configVersion"`, "the document is on stdout")
		assert.False(t, f.childRan(), "no child process")
	})

	t.Run("SIGTERM reaches the child", func(t *testing.T) {
		f := newHookFixture(t, cacheDir, map[string]map[string]any{"a": {}})
		// Keystone here accepts the connection and never answers: the child waits in its first
		// request, and only the forwarded signal can end it early.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		connected := make(chan struct{}, 1)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
				select {
				case connected <- struct{}{}:
				default:
				}
			}
		}()
		clouds := fmt.Sprintf("clouds:\n  %s:\n    auth: {auth_url: 'http://%s/v3', username: u, password: p, project_name: p, "+
			"user_domain_name: Default, project_domain_name: Default}\n", fakecloud.AdminCloud, l.Addr())
		_, err = f.kube.Update(fakekube.SecretResource, "ns", "s1", "", fakekube.Object{"apiVersion": "v1",
			"kind": "Secret", "metadata": map[string]any{"name": "s1", "namespace": "ns"},
			"stringData": map[string]any{"clouds.yaml": clouds}})
		require.NoError(t, err)
		cmd, out := f.command(t, pdkmock, nil)
		p := start(t, cmd, out)
		select {
		case <-connected:
		case <-p.done:
			t.Fatalf("the hook ended before it reached Keystone:\n%s", out)
		case <-time.After(2 * time.Minute):
			t.Fatalf("the hook never reached Keystone:\n%s", out)
		}
		require.True(t, f.childRan(), "the request came from the supervised child")
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		_ = p.wait(t, time.Minute)
		t.Log(out)
		assert.Equal(t, 1, cmd.ProcessState.ExitCode(), "the child's code for a cancelled pass")
		assert.Contains(t, out.String(), "context canceled", "the child saw the signal")
		assert.NotContains(t, out.String(), "overran")
		assert.NotContains(t, out.String(), "did not send")
	})

	t.Run("a child that dies is not run again", func(t *testing.T) {
		f := newHookFixture(t, cacheDir, map[string]map[string]any{"a-spin": {"action": "loop"}})
		cmd, out := f.command(t, pdkmock, []string{"OPENSTACK_SYNC_WASM_CALL_TIMEOUT=10m"})
		p := start(t, cmd, out)
		child := childOf(t, cmd.Process.Pid)
		waitFor(t, func() bool { return f.childRan() })
		require.NoError(t, syscall.Kill(child, syscall.SIGKILL), "kill %d\n%s", child, out)
		// Bounded: a supervisor that ran the pass again (the spinning CR has a 10-minute call
		// timeout) would otherwise hang the package until go test's own timeout, without its log.
		err := p.wait(t, 2*time.Minute)
		t.Log(out)
		require.Error(t, err)
		assert.Equal(t, 1, cmd.ProcessState.ExitCode())
		assert.Contains(t, out.String(), "the hook process died on a signal the supervisor did not send; the pass is not run again")
		assert.Contains(t, out.String(), "signal=killed")
		assert.NotContains(t, out.String(), "runs again")
		assert.Nil(t, f.ready(t, "a-spin"), "no second pass wrote a status")
	})
}

func waitFor(t *testing.T, cond func() bool) {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// docs/contract.md §1.1: a hook run leaves on disk only what docs/operating.md lists ("What
// persists between runs"), all of it in the compilation cache directory; with the cache off it
// leaves nothing at all.
func TestOnlyTheListedFilesOutliveARun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whole hook processes")
	}
	pdkmock := mockGuest(t, "pdkmock")
	listed := map[string]bool{"metadata": true, "shaped": true, "memo": true, "replay": true, "overrun": true}
	files := func(dir string) []string {
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, rel)
			}
			return nil
		})
		return out
	}
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "with the cache", true: "with the cache off"}[off], func(t *testing.T) {
			cacheDir := t.TempDir()
			f := newHookFixture(t, cacheDir, map[string]map[string]any{"a": {}})
			before := append(files(f.dir), "child-ran") // the test's own mark of the supervised child
			slices.Sort(before)
			var env []string
			if off {
				env = []string{"OPENSTACK_SYNC_CACHE_DIR=off"}
			}
			cmd, out := f.command(t, pdkmock, env)
			require.NoError(t, runHook(t, cmd, out), out.String())
			assert.Equal(t, before, files(f.dir), "nothing in the hook's home")
			left := files(cacheDir)
			if off {
				assert.Empty(t, left, "nothing at all with the cache off")
				return
			}
			require.NotEmpty(t, left)
			for _, rel := range left {
				top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
				assert.True(t, listed[top] || strings.HasPrefix(top, "wazero-"), "%s is not a file docs/operating.md lists", rel)
			}
		})
	}
}
