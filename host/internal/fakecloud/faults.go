package fakecloud

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Fault changes how the cloud answers matching requests. Matching requests are answered by the
// first fault that still has uses left, in the order they were injected.
type Fault struct {
	// Service limits the fault to Identity, Network or Baremetal; empty matches every service.
	Service string
	// Method limits the fault to one HTTP method; empty matches every method.
	Method string
	// Path limits the fault to URL paths starting with it, e.g. "/v2.0/flavors"; empty matches all.
	Path string
	// Times is how many matching requests the fault affects; 0 means every one.
	Times int

	// Delay holds the request this long before it is answered (by Status or by the real handler).
	Delay time.Duration
	// Status answers with this HTTP status instead of the real handler (0: the handler answers).
	Status int
	// Body is the answer's body when Status is set; a Neutron-style error by default.
	Body string
	// RetryAfter is sent as the Retry-After header when Status is set.
	RetryAfter string
	// Reset closes the connection without an answer, as a crashed proxy would.
	Reset bool
}

type faultRule struct {
	Fault
	used int
}

// Inject adds a fault and returns a function that removes it.
func (c *Cloud) Inject(f Fault) (remove func()) {
	rule := &faultRule{Fault: f}
	c.mu.Lock()
	c.faults = append(c.faults, rule)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, r := range c.faults {
			if r == rule {
				c.faults = append(c.faults[:i], c.faults[i+1:]...)
				return
			}
		}
	}
}

func (c *Cloud) takeFault(service string, r *http.Request) *Fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.faults {
		if f.Service != "" && f.Service != service || f.Method != "" && f.Method != r.Method ||
			!strings.HasPrefix(r.URL.Path, f.Path) || f.Times > 0 && f.used >= f.Times {
			continue
		}
		f.used++
		copied := f.Fault
		return &copied
	}
	return nil
}

// applyFault answers r as a matching fault says; it reports whether the request was answered.
func (c *Cloud) applyFault(service string, w http.ResponseWriter, r *http.Request) bool {
	f := c.takeFault(service, r)
	if f == nil {
		return false
	}
	if f.Delay > 0 {
		// The server notices a client hanging up only once the body is consumed, so read it first;
		// a handler that runs after the delay reads the copy.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return true
		}
	}
	if f.Reset {
		resetConnection(w)
		return true
	}
	if f.Status == 0 {
		return false
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	body := f.Body
	if body == "" {
		body = `{"NeutronError": {"type": "HTTPError", "message": "injected fault", "detail": ""}}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(body))
	return true
}

// resetConnection drops the TCP connection with an RST, so the client sees "connection reset".
func resetConnection(w http.ResponseWriter) {
	if sr, ok := w.(*statusRecorder); ok && sr.record != nil {
		sr.record()
	}
	for {
		if u, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
			w = u.Unwrap()
			continue
		}
		break
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("fakecloud: connection cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
