package supervise

import "fmt"

// EnvTermination chooses how a hook run stops a plugin call past its deadline.
const EnvTermination = "OPENSTACK_SYNC_WASM_TERMINATION"

// Mode is a value of EnvTermination.
type Mode string

const (
	// Process (the default on Linux, the only system where it is available): guest code runs without termination checks in a child process,
	// which the hook's supervisor kills at a call's deadline; the pass then runs again in-process
	// with the checks on.
	Process Mode = "process"
	// Checks: the pass runs in the hook's own process with wazero's termination checks, which
	// stop a call at its deadline (2-3x the guest's CPU; no second process).
	Checks Mode = "checks"
	// None: no checks and no supervisor; a runaway guest holds the hook until it is killed from
	// outside. Only for plugins whose loops are known to end.
	None Mode = "none"
)

// ModeFromEnv reads EnvTermination. trusted is the older opt-out
// (OPENSTACK_SYNC_WASM_TRUSTED_NO_INTERRUPT=true), deprecated: alone it means None, and it
// contradicts any other mode set explicitly.
func ModeFromEnv(lookupEnv func(string) (string, bool), trusted bool) (Mode, error) {
	v, ok := lookupEnv(EnvTermination)
	if !ok || v == "" {
		switch {
		case trusted:
			return None, nil
		case !processSupported:
			return Checks, nil
		}
		return Process, nil
	}
	switch m := Mode(v); m {
	case None:
		return m, nil
	case Process, Checks:
		if m == Process && !processSupported {
			return "", fmt.Errorf("%s=%s needs Linux; use %s or %s", EnvTermination, v, Checks, None)
		}
		if trusted {
			return "", fmt.Errorf("%s=%s contradicts OPENSTACK_SYNC_WASM_TRUSTED_NO_INTERRUPT=true (which means %s=%s); "+
				"unset the deprecated variable", EnvTermination, v, EnvTermination, None)
		}
		return m, nil
	}
	return "", fmt.Errorf("%s must be %s, %s or %s, got %q", EnvTermination, Process, Checks, None, v)
}
