package modulecache

import (
	"encoding/json"
	"time"
)

// The overrun marker (kind Overrun): when a watched module overran a deadline (the supervisor
// killed the hook process), later runs of the same module bytes keep wazero's termination checks
// on, so a plugin that loops once is stopped at its deadline in-process from then on instead of
// costing a killed process and a second pass every run. Tied to the module's digest, a new
// version of the plugin starts without it; deleting the file does too.

// OverrunMarker is what the marker records, for the operator who finds it.
type OverrunMarker struct {
	Plugin  string    `json:"plugin"`
	Entry   string    `json:"entry"`
	Object  string    `json:"object,omitempty"`
	Timeout string    `json:"timeout"`
	Time    time.Time `json:"time"`
}

// MarkOverrun writes module's marker and returns its path.
func (d Dir) MarkOverrun(module Digest, o OverrunMarker) (string, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return "", err
	}
	if err := d.Write(Overrun, module.String(), module, append(b, '\n')); err != nil {
		return "", err
	}
	return d.OverrunPath(module), nil
}

// Overran reports whether module has a marker. A marker that cannot be read or fails the check
// still says the module may loop (true, with the error): the checks cost CPU, a loop without them
// a killed process.
func (d Dir) Overran(module Digest) (bool, error) {
	switch _, err := d.Read(Overrun, module.String(), module); {
	case err == nil:
		return true, nil
	case IsMissing(err):
		return false, nil
	default:
		return true, err
	}
}

// OverrunPath is module's marker's file.
func (d Dir) OverrunPath(module Digest) string { return d.Path(Overrun, module.String()) }
