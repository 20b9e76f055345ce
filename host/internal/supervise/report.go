package supervise

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// EnvChild tells a process it is the supervised child and which descriptor its reports go to.
// The parent sets it; it is internal, not an operator setting.
const EnvChild = "OPENSTACK_SYNC_SUPERVISED_FD"

// childFD is the descriptor of the report pipe in the child (the first of exec.Cmd.ExtraFiles).
const childFD = 3

// maxLine keeps every report one write of at most PIPE_BUF bytes, which the kernel never
// interleaves with another: concurrent calls on several instances report without a lock.
const maxLine = 4096

// Reporter is the child's side of the report pipe.
type Reporter struct {
	f    *os.File
	next atomic.Uint64
}

// ChildReporter returns the reporter of a supervised child, or nil when this process is not one
// (EnvChild unset). A set variable whose descriptor is not a pipe is an error: the variable is
// internal, and a hook that believed itself supervised while nobody watches would run guests
// with nothing to stop them.
func ChildReporter(lookupEnv func(string) (string, bool)) (*Reporter, error) {
	v, ok := lookupEnv(EnvChild)
	if !ok {
		return nil, nil
	}
	if v != strconv.Itoa(childFD) {
		return nil, fmt.Errorf("%s is internal to the hook's supervisor and must be %d, got %q; unset it", EnvChild, childFD, v)
	}
	f, err := openReportPipe()
	if err != nil {
		return nil, err
	}
	return &Reporter{f: f}, nil
}

// Begin announces guest code for plugin's entry (on object, "" when none) that must return by
// deadline, and returns the id End takes. A zero deadline is never enforced.
func (r *Reporter) Begin(plugin, entry, object string, deadline time.Time) uint64 {
	id := r.next.Add(1)
	timeout := int64(-1)
	if !deadline.IsZero() {
		timeout = max(int64(time.Until(deadline)), 0)
	}
	line := make([]byte, 0, 128)
	line = append(line, 'B', '\t')
	line = strconv.AppendUint(line, id, 10)
	line = append(line, '\t')
	line = strconv.AppendInt(line, timeout, 10)
	for _, f := range []string{plugin, entry, object} {
		line = append(line, '\t')
		line = append(line, field(f)...)
	}
	r.write(append(line, '\n'))
	return id
}

// End says the guest code id announced has returned.
func (r *Reporter) End(id uint64) {
	var buf [32]byte
	line := append(buf[:0], 'E', '\t')
	line = strconv.AppendUint(line, id, 10)
	r.write(append(line, '\n'))
}

// Done says a step of the pass is finished (step: a line of the hook's journal, without tabs or
// line breaks), so that the pass run again after a kill does not repeat it. A step too long for
// one report is not sent: the pass run again does it again, as before resuming existed.
func (r *Reporter) Done(step []byte) {
	if len(step)+3 > maxLine || bytes.ContainsAny(step, "\t\n") {
		return
	}
	line := make([]byte, 0, len(step)+3)
	line = append(line, 'D', '\t')
	line = append(line, step...)
	r.write(append(line, '\n'))
}

// write sends one report. An error means the parent is gone, and the kernel then kills this
// process too (parentDeathSignal); until it does, the pass goes on.
func (r *Reporter) write(line []byte) {
	_, _ = r.f.Write(line)
}

// field keeps a name on its own field of one short line.
func field(s string) string {
	if len(s) > 512 {
		s = s[:512]
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
