// Command guestbench runs a plugin's Go test binary, built for wasip1, under wazero as the host
// runs plugins (the compiler, termination checks on unless -no-interrupt) and prints the CPU the
// run took. The plugin's own benchmarks then measure its guest code in the sandbox, where
// encoding/json and every loop pay the host's termination checks, which a native benchmark
// cannot show (docs/benchmarks.md, "Profiling a hook run"):
//
//	cd plugins-wasm/ironic-runbooks && GOOS=wasip1 GOARCH=wasm go test -c -o /tmp/rb.wasm .
//	go run ./hack/guestbench /tmp/rb.wasm -test.run '^$' -test.bench 'GuestReconcileConverged/crs=1000/list' -test.benchtime 2x
//
// The plugin's imports from the Extism ABI are stubs that fail when called: the benchmarks answer
// OpenStack through bench.Replay (pdk/experimental/bench) and never reach them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

func main() {
	noInterrupt := flag.Bool("no-interrupt", false, "compile without termination checks (OPENSTACK_SYNC_WASM_TRUSTED_NO_INTERRUPT)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: guestbench [-no-interrupt] <test binary.wasm> [test flags]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Args()[1:], !*noInterrupt); err != nil {
		fmt.Fprintln(os.Stderr, "guestbench:", err)
		os.Exit(1)
	}
}

func run(path string, args []string, interrupt bool) error {
	ctx := context.Background()
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(interrupt))
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	compiled, err := r.CompileModule(ctx, wasm)
	if err != nil {
		return err
	}
	stubs := map[string]wazero.HostModuleBuilder{}
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		if stubs[mod] == nil {
			stubs[mod] = r.NewHostModuleBuilder(mod)
		}
		stubs[mod].NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
			panic(fmt.Sprintf("guestbench: %s %s is not available to a benchmark", mod, name))
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	for _, b := range stubs {
		if _, err := b.Instantiate(ctx); err != nil {
			return err
		}
	}
	cfg := wazero.NewModuleConfig().WithArgs(append([]string{"guest.test"}, args...)...).
		WithStdout(os.Stdout).WithStderr(os.Stderr).WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	// A deadline, as the host gives every call, so termination checks are what they cost there.
	runCtx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	start := cpuTime()
	_, err = r.InstantiateModule(runCtx, compiled, cfg)
	fmt.Printf("guestbench: %s CPU (termination checks %v)\n", cpuTime()-start, map[bool]string{true: "on", false: "off"}[interrupt])
	return err
}

// cpuTime is the process's user+system CPU time: the number to compare on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
