// Command mutate checks that the tests pin the framework's safety rules: it breaks each rule in
// a temporary copy of the repository (one exact source edit), runs the tests that should notice,
// and reports every mutation they did not catch. Run: make mutate (or go run ./hack/mutate [-run
// REGEXP]). The last score is recorded in docs/reliability.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// mutation breaks one rule: From must occur exactly once in File and becomes To; the tests Run
// in Pkg (from the module at Dir, the repository's root when empty) must then fail.
type mutation struct {
	Rule, File, From, To, Pkg, Run, Dir string
}

var mutations = []mutation{
	{Rule: "an instance serves one credential group (spent mark)",
		File: "host/internal/wasm/pool.go", From: "if inst.broken || inst.spent || closed {", To: "if inst.broken || closed {",
		Pkg: "./host/internal/wasm/", Run: "TestInstancesAreRetiredInTheRunnersOrder|TestAnInstanceNeverServesTwoCredentialGroups"},
	{Rule: "a permanent session error overrides the guest's answer",
		File: "host/internal/wasm/call.go", From: "\tif ci.permanent == nil {\n\t\treturn err\n\t}", To: "\tif true {\n\t\treturn err\n\t}",
		Pkg: "./host/internal/wasm/", Run: "TestPermanentSession"},
	{Rule: "a call outside the grants is refused",
		File: "host/internal/wasm/openstack.go", From: "if !p.grants.Allows(req.Service, req.Method, req.Path) {", To: "if false {",
		Pkg: "./host/internal/wasm/", Run: "Grant|Misbehav"},
	{Rule: "an oversized response reaches the guest as too_large",
		File: "host/internal/wasm/openstack.go", From: "if plugin.IsTooLarge(err) {", To: "if false {",
		Pkg: "./host/internal/wasm/", Run: "TestOversizedResponseReachesTheGuestAsTooLarge"},
	{Rule: "only allow-listed request headers are forwarded",
		File: "host/internal/plugin/limits.go", From: "if slices.Contains(forwardedHeaders, canonical) {", To: "if slices.Contains(forwardedHeaders, canonical) || true {",
		Pkg: "./host/internal/openstack/", Run: "TestDoRejectsUnsafeRequests"},
	{Rule: "tokens are redacted from response bodies",
		File: "host/internal/openstack/redact.go", From: "body = bytes.ReplaceAll(body, []byte(token), redacted)", To: "_ = redacted",
		Pkg: "./host/internal/openstack/", Run: "TestResponseBodiesNeverCarryATokenToThePlugin"},
	{Rule: "every declared count is checked against the bytes left",
		File: "host/internal/wasm/admission/structure.go", From: "if !r.bad && n > uint64(len(r.b)) {", To: "if false {",
		Pkg: "./host/internal/wasm/admission/ ./host/internal/wasm/", Run: "TestHostileModulesOfEverySectionKindAreRefused|TestModulesDeclaringHugeHostAllocationsAreRefused"},
	{Rule: "every table gets a maximum within the cap",
		File: "host/internal/wasm/admission/structure.go", From: "maximum = min(maximum, declared)", To: "maximum = declared",
		Pkg: "./host/internal/wasm/", Run: "TestTableGrowthIsCappedInsideTheGuest|TestRealPluginsPassTheStructuralLimits"},
	{Rule: "deeply nested control flow is refused before compiling",
		File: "host/internal/wasm/admission/compile.go", From: "if depth++; depth > MaxNesting {", To: "if depth++; false {",
		Pkg: "./host/internal/wasm/admission/", Run: "TestPathologicalControlFlowIsRefusedBeforeCompiling"},
	{Rule: "a compile past its deadline fails the load",
		File: "host/internal/wasm/admission/compile.go", From: "ctx, cancel := context.WithTimeout(parent, timeout)", To: "ctx, cancel := context.WithTimeout(parent, timeout*1000)",
		Pkg: "./host/internal/wasm/", Run: "TestCompileDeadlineNamesTheModule"},
	{Rule: "a guest's linear memory is mapped, never copied as it grows",
		File: "host/internal/wasm/linearmemory_unix.go", From: "\treturn experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(newMappedMemory))",
		To:  "\t_ = experimental.WithMemoryAllocator\n\treturn ctx",
		Pkg: "./host/internal/wasm/", Run: "TestGuestsAtTheirMemoryLimitKeepHostRSSWithinTheBound"},
	{Rule: "plugin text is cleaned before status and logs",
		File: "host/internal/status/text.go", From: "if !strings.ContainsFunc(text, unsafeRune) {", To: "if true {",
		Pkg: "./host/internal/status/ ./host/internal/runner/", Run: "Clean|PluginText"},
	{Rule: "a failed reconcile skips prune",
		File: "host/internal/runner/scope.go", From: "if n > 0 {\n\t\tf.failed[c] += n", To: "if false {\n\t\tf.failed[c] += n",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "an unreadable CR skips prune",
		File: "host/internal/runner/scope.go", From: "f.unreadable = append(f.unreadable, s)", To: "_ = s",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "every group's prune protects every group's desired names",
		File: "host/internal/runner/scope.go", From: "crs := plan.Desired", To: "crs := []*resource.Resource(nil)",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "without a per-group prune any failure skips every group's prune",
		File: "host/internal/runner/runner.go", From: "if scope.any() && !rn.meta.PrunePerGroup {", To: "if false {",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "a per-group prune is skipped when its own group failed",
		File: "host/internal/runner/scope.go", From: "return f.failed[c], unreadable", To: "return 0, unreadable",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "an unreadable CR stops the prune of the group it names",
		File: "host/internal/resource/resource.go", From: "return *s.Group == c", To: "return false",
		Pkg: "./host/internal/resource/ ./host/internal/runner/", Run: "."},
	{Rule: "an unreadable CR of an unknown namespace stops every prune",
		File: "host/internal/resource/resource.go", From: "case s.Namespace == \"\":\n\t\treturn true", To: "case s.Namespace == \"\":\n\t\treturn false",
		Pkg: "./host/internal/resource/ ./host/internal/runner/", Run: "."},
	{Rule: "a per-group prune receives only its own group's specs (bounded input)",
		File: "host/internal/runner/scope.go", From: "crs = desired[c]", To: "crs = plan.Desired",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "an authoritative empty prune needs a deleted CR in the group",
		File: "host/internal/runner/runner.go", From: "authoritative := len(desired[creds]) == 0 && len(deleted[creds]) > 0", To: "authoritative := len(desired[creds]) == 0 && len(deleted[creds]) >= 0",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "a finalizer is released only after its group's prune ran",
		File: "host/internal/runner/runner.go", From: "if pruned[cr.Credentials] {", To: "if pruned[cr.Credentials] || true {",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "the finalizer is added before anything is created",
		File: "host/internal/runner/runner.go", From: "if cr.HasFinalizer(fin) == policy.UsesFinalizer() {", To: "if true {",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "a release never strips a newer object holding the same name",
		File: "host/internal/runner/runner.go", From: "if h := rn.holder[cr.Ref()]; h != \"\" && cr.UID != \"\" && h != cr.UID {", To: "if h := rn.holder[cr.Ref()]; h != \"\" && cr.UID != \"\" && h != cr.UID && false {",
		Pkg: "./host/internal/runner/", Run: "."},
	{Rule: "a CR being deleted is never reconciled",
		File: "host/internal/planner/planner.go", From: "case r.Deleting || ev == bindingctx.Deleted:", To: "case ev == bindingctx.Deleted:",
		Pkg: "./host/internal/planner/ ./host/internal/runner/", Run: "."},
	// Issue 25: what the performance work opened.
	{Rule: "a module past the size cap is refused",
		File: "host/internal/wasm/admission/structure.go", From: "if len(b) > MaxModuleBytes {", To: "if false {",
		Pkg: "./host/internal/wasm/admission/", Run: "TestEverySectionKindIsCapped"},
	{Rule: "a section kind the decoder pays for per entry is counted (types)",
		File: "host/internal/wasm/admission/structure.go", From: "err = r.eachUpTo(\"type\", maxTypes, func(i uint64) error { return s.checkType(r) })",
		To:  "err = r.each(\"type\", func(i uint64) error { return s.checkType(r) })",
		Pkg: "./host/internal/wasm/admission/", Run: "TestEverySectionKindIsCapped|TestLoadMemoryStaysWithinTheBound"},
	{Rule: "calls are counted per function",
		File: "host/internal/wasm/admission/compile.go", From: "if calls++; calls > maxFunctionCalls {", To: "if calls++; false {",
		Pkg: "./host/internal/wasm/admission/", Run: "TestPathologicalControlFlowIsRefusedBeforeCompiling"},
	{Rule: "the compiled bytes are the hashed bytes",
		File: "host/internal/wasm/admission/modulefile.go", From: "if sha256.Sum256(b) != digest {", To: "if false {",
		Pkg: "./host/internal/wasm/", Run: "TestTheCompiledBytesAreTheHashedBytes"},
	{Rule: "a cache file of another module is refused",
		File: "host/internal/modulecache/modulecache.go", From: "!bytes.Equal(h[12:12+sha256.Size], module[:])", To: "false && !bytes.Equal(h[12:12+sha256.Size], module[:])",
		Pkg: "./host/internal/modulecache/ ./host/internal/wasm/", Run: "TestAFileIsTrustedOnlyWhenItIsTheModulesAndIntact|TestAShapedModuleIsUsedOnlyWithItsData|TestTheRecordAndTheMarkerAreThePinnedModules|TestTheShapedModuleIsCached|TestMetadataRecord"},
	{Rule: "a data file with a segment outside the memory is refused before any instance reads it",
		File: "host/internal/modulecache/data.go", From: "if offset+n > uint64(minPages)*pageSize {", To: "if false {",
		Pkg: "./host/internal/modulecache/ ./host/internal/wasm/", Run: "TestTheDataFileIsCheckedBeforeAnyInstanceReadsIt|TestTheShapedModuleIsCached"},
	{Rule: "cached files that do not fit the module make the load start over",
		File: "host/internal/wasm/plugin.go", From: "if errors.As(err, &cached) {", To: "if false {",
		Pkg: "./host/internal/wasm/", Run: "TestTheShapedModuleIsCached"},
	{Rule: "the metadata record is the module's own answer before any call",
		File: "host/internal/wasm/plugin.go", From: "if !bytes.Equal(out, p.metadataJSON) {", To: "if false && !bytes.Equal(out, p.metadataJSON) {",
		Pkg: "./host/internal/wasm/", Run: "TestLoadTakesTheMetadataFromTheRecord"},
	{Rule: "a memo record from the future is never used",
		File: "host/internal/memo/memo.go", From: "return !made.After(now) && now.Sub(made) <= m.maxAge", To: "return now.Sub(made) <= m.maxAge",
		Pkg: "./host/internal/memo/", Run: "TestARecordFromTheFutureIsNeverUsed"},
	{Rule: "the memo keeps within its bound in bytes",
		File: "host/internal/memo/memo.go", From: "for m.size > m.maxBytes-binary.MaxVarintLen64 && len(uids) > 0 {", To: "for false {",
		Pkg: "./host/internal/memo/", Run: "TestTheMemoIsBoundedInBytes|TestTheMemoStaysWithinItsMemoryBound"},
	{Rule: "a CR's result past the per-CR bound is not recorded",
		File: "host/internal/memo/memo.go", From: "if len(result) > maxResult || len(uid) > maxUID {", To: "if len(uid) > maxUID {",
		Pkg: "./host/internal/memo/", Run: "TestTheMemoIsBoundedInBytes"},
	{Rule: "the memo's pieces of evidence are bounded before any is read",
		File: "host/internal/memo/memo.go", From: "	if n > MaxPieces {", To: "	if false {",
		Pkg: "./host/internal/memo/", Run: "TestTheMemoRefusesTooManyPieces"},
	{Rule: "a terminal failure stops no prune",
		File: "host/internal/runner/runner.go", From: "scope.fail(creds, f)\n", To: "scope.fail(creds, f+t)\n",
		Pkg: "./host/internal/runner/", Run: "TestATerminalFailureStopsNoPruneInAnyRun"},
	{Rule: "the pass run again after a kill takes what the killed pass finished as done",
		File: "host/internal/runner/runner.go", From: "rn.done = indexSteps(rn.Done)", To: "rn.done = nil",
		Pkg: "./host/internal/runner/ ./host/internal/statemachine/", Run: "."},
	{Rule: "a refused status write fails the run",
		File: "host/internal/runner/runner.go", From: "if n := rn.statusFailed.Load(); n > 0 {", To: "if n := rn.statusFailed.Load(); false && n > 0 {",
		Pkg: "./host/internal/runner/", Run: "TestStatusWrites"},
	{Rule: "plugin pull never replaces a file with another module than the one required",
		File: "host/internal/ociplugin/ociplugin.go", From: "want != \"\" && \"sha256:\"+want != got {", To: "false {",
		Pkg: "./host/internal/ociplugin/", Run: "TestPullIsBounded"},
	{Rule: "plugin new refuses a module path that is not one go.mod token",
		File: "host/internal/scaffold/scaffold.go", From: "case !moduleRE.MatchString(m.Module):", To: "case false:",
		Pkg: "./host/internal/scaffold/", Run: "TestBadOptions"},
	{Rule: "an invalid runbook spec costs no request",
		File: "plugins-wasm/ironic-runbooks/main.go", From: "if err := spec.check(); err != nil {", To: "if err := error(nil); err != nil {",
		Dir: "plugins-wasm", Pkg: "./ironic-runbooks/", Run: "TestReconcileReportsInvalidSpecBeforeAnyRequest"},
	{Rule: "the evidence helper flags a field the memo's evidence leaves out",
		File: "pdk/pdktest/evidence.go", From: "if run.same(base) {", To: "if true {",
		Dir: "pdk", Pkg: "./pdktest/", Run: "TestRequireCompleteEvidence"},
}

func main() {
	only := flag.String("run", "", "only the mutations whose rule matches this regular expression")
	applies := flag.Bool("check", false, "only check that every edit still applies (exactly once), without running tests (make lint)")
	flag.Parse()
	root, err := os.Getwd()
	check(err)
	if *applies {
		os.Exit(checkEdits(root))
	}
	var filter *regexp.Regexp
	if *only != "" {
		filter = regexp.MustCompile(*only)
	}
	tmp, err := os.MkdirTemp("", "openstack-sync-mutate-*")
	check(err)
	defer os.RemoveAll(tmp)
	check(copyTree(root, tmp))

	caught, total := 0, 0
	var survived []string
	for _, m := range mutations {
		if filter != nil && !filter.MatchString(m.Rule) {
			continue
		}
		total++
		path := filepath.Join(tmp, m.File)
		orig, err := os.ReadFile(path)
		check(err)
		if n := bytes.Count(orig, []byte(m.From)); n != 1 {
			fmt.Printf("STALE   %s: %q occurs %d times in %s (update hack/mutate)\n", m.Rule, m.From, n, m.File)
			survived = append(survived, m.Rule+" (stale)")
			continue
		}
		check(os.WriteFile(path, bytes.Replace(orig, []byte(m.From), []byte(m.To), 1), 0o644))
		start := time.Now()
		args := append([]string{"test", "-count=1", "-run", m.Run}, strings.Fields(m.Pkg)...)
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(tmp, m.Dir)
		out, err := cmd.CombinedOutput()
		check(os.WriteFile(path, orig, 0o644))
		switch {
		case err == nil:
			fmt.Printf("SURVIVED %s (%s)\n", m.Rule, m.File)
			survived = append(survived, m.Rule)
		case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
			fmt.Printf("INVALID  %s: the mutation does not build\n%s\n", m.Rule, out)
			survived = append(survived, m.Rule+" (does not build)")
		default:
			caught++
			fmt.Printf("caught   %s (%s, %.0fs)\n", m.Rule, m.File, time.Since(start).Seconds())
		}
	}
	fmt.Printf("mutation score: %d of %d caught\n", caught, total)
	if len(survived) > 0 {
		os.Exit(1)
	}
}

// checkEdits reports every mutation whose From no longer occurs exactly once in its File, so an
// edit that went stale fails make lint the day the code under it changes, not the next time
// someone runs make mutate.
func checkEdits(root string) int {
	stale := 0
	for _, m := range mutations {
		b, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			fmt.Printf("STALE   %s: %v (update hack/mutate)\n", m.Rule, err)
			stale++
			continue
		}
		if n := bytes.Count(b, []byte(m.From)); n != 1 {
			fmt.Printf("STALE   %s: %q occurs %d times in %s (update hack/mutate)\n", m.Rule, m.From, n, m.File)
			stale++
		}
	}
	if stale > 0 {
		fmt.Printf("mutate: %d of %d edits no longer apply\n", stale, len(mutations))
		return 1
	}
	fmt.Printf("mutate: all %d edits apply\n", len(mutations))
	return 0
}

// copyTree copies the files git knows (tracked or not ignored) of root into dst.
func copyTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("listing files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		info, err := os.Stat(filepath.Join(root, name))
		if os.IsNotExist(err) || err == nil && info.IsDir() {
			continue
		}
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
}
