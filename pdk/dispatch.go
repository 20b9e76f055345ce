package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// instance is the guest-side state of one wasm instance: the open group's cache.
type instance struct {
	groupCache map[string]any
}

// wire is m as the metadata entry point reports it: the ABI's message, with what the stable
// Metadata does not show (experimental.SkipStatus).
func (m *Metadata) wire() abi.Metadata {
	return abi.Metadata{ABIVersion: ABIVersion, Name: m.Name, Noun: m.Noun, EnvPrefix: m.EnvPrefix,
		BindingName: m.BindingName, Probe: m.Probe, Grants: m.Grants, Cleanup: m.Cleanup, HasPrune: m.HasPrune,
		Version: m.Version, Description: m.Description, Source: m.Source, HasRemark: m.HasRemark,
		HasDelete: m.HasDelete, Lifecycle: m.Lifecycle, PruneScope: m.PruneScope, SkipStatus: m.skipStatus,
		StatusKeys: m.StatusKeys, PruneKeys: m.PruneKeys, Sources: m.Sources, Profiles: m.Profiles, Deterministic: m.Deterministic}
}

type reconcileMessage struct {
	ABIVersion int `json:"abi_version"`
	ReconcileRequest
}

type pruneMessage struct {
	ABIVersion int `json:"abi_version"`
	PruneRequest
}

// dispatch runs one entry point: it decodes input, calls the registered handler and encodes its
// output. A non-nil *abi.Error is what the entry point reports through error_set.
func (in *instance) dispatch(entry string, input []byte, h host) ([]byte, *abi.Error) {
	p := registered
	if p == nil {
		return nil, &abi.Error{Message: "no plugin registered: call pdk.Register from an init function", Permanent: true}
	}
	if entry != abi.EntryMetadata && !hasCurrentABI(input) {
		var env abi.Envelope
		if err := json.Unmarshal(input, &env); err != nil {
			return nil, &abi.Error{Message: fmt.Sprintf("%s: decoding input: %v", entry, err), Permanent: true}
		}
		if env.ABIVersion != ABIVersion {
			return nil, &abi.Error{Message: fmt.Sprintf("%s: host speaks ABI version %d, plugin speaks %d",
				entry, env.ABIVersion, ABIVersion), Permanent: true}
		}
	}
	switch entry {
	case abi.EntryMetadata:
		return marshal(p.Metadata.wire())
	case abi.EntryGroupBegin:
		in.groupCache = map[string]any{}
		return nil, nil
	case abi.EntryGroupEnd:
		in.groupCache = nil
		return nil, nil
	case abi.EntryWaitForAPI:
		if p.WaitForAPI == nil {
			return nil, nil
		}
		return nil, toWire(p.WaitForAPI(newContext(h, nil)))
	case abi.EntryReconcile, abi.EntryDelete:
		handler := p.Reconcile
		if entry == abi.EntryDelete {
			handler = p.Delete
		}
		if handler == nil {
			return nil, &abi.Error{Message: "plugin has no " + entry + " handler", Permanent: true}
		}
		var msg reconcileMessage
		if err := decodeReconcile(input, &msg, p.Metadata.skipStatus); err != nil {
			return nil, &abi.Error{Message: entry + ": decoding input: " + err.Error(), Permanent: true}
		}
		ctx := newContext(h, in.groupCache)
		res, err := handler(ctx, &msg.ReconcileRequest)
		if err != nil {
			return nil, toWire(err)
		}
		if res == nil {
			res = &Result{}
		}
		return encodeResult(res)
	case abi.EntryPrune:
		if p.Prune == nil {
			return nil, &abi.Error{Message: "plugin has no Prune handler", Permanent: true}
		}
		var msg pruneMessage
		if err := decodePrune(input, &msg); err != nil {
			return nil, &abi.Error{Message: "prune: decoding input: " + err.Error(), Permanent: true}
		}
		return nil, toWire(p.Prune(newContext(h, nil), &msg.PruneRequest))
	case abi.EntryRemark:
		if p.Remark == nil {
			return nil, &abi.Error{Message: "plugin has no Remark handler", Permanent: true}
		}
		var msg RemarkRequest
		if err := json.Unmarshal(input, &msg); err != nil {
			return nil, &abi.Error{Message: "remark: decoding input: " + err.Error(), Permanent: true}
		}
		res, err := p.Remark(newContext(h, nil), &msg)
		if err != nil {
			return nil, toWire(err)
		}
		if res == nil {
			res = &RemarkResult{}
		}
		return marshal(res)
	}
	return nil, &abi.Error{Message: "unknown entry point " + entry, Permanent: true}
}

// hasCurrentABI recognises the envelope the host writes (abi_version first, docs/abi.md) without
// a JSON decode: in wasm, with the host's termination checks on, a decode of even a tiny message
// costs tens of microseconds, which would be most of a group_begin.
func hasCurrentABI(input []byte) bool {
	const prefix = `{"abi_version":1`
	if len(input) <= len(prefix) || string(input[:len(prefix)]) != prefix {
		return false
	}
	return input[len(prefix)] == ',' || input[len(prefix)] == '}'
}

func marshal(v any) ([]byte, *abi.Error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &abi.Error{Message: "encoding output: " + err.Error(), Permanent: true}
	}
	return b, nil
}

func toWire(err error) *abi.Error {
	if err == nil {
		return nil
	}
	return &abi.Error{Message: err.Error(), Reason: Reason(err), Permanent: IsPermanent(err)}
}

// decodeResponse turns the host's answer to openstack_request into a Response or an error: a
// JSON head, then (after a newline) the body as is.
func decodeResponse(raw []byte) (*Response, error) {
	head, body, _ := bytes.Cut(raw, []byte{'\n'})
	var w abi.OpenStackResponse
	if err := decodeJSON(head, &w, false); err != nil {
		return nil, fmt.Errorf("decoding the host's answer: %w", err)
	}
	if w.Error != nil {
		return nil, &HostError{Kind: w.Error.Kind, Message: w.Error.Message, IsPermanent: w.Error.Permanent}
	}
	return &Response{StatusCode: w.Status, Header: w.Headers, Body: body}, nil
}

// encodeRequest turns a Request into the openstack_request input.
func encodeRequest(req *Request) ([]byte, error) {
	w := abi.OpenStackRequest{Service: req.Service, Method: req.Method, Path: req.Path, Query: req.Query,
		Headers: req.Header, Microversion: req.Microversion}
	var err error
	if w.Body, err = encodeBody(req.Method+" "+req.Service+" "+req.Path, req.Body); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// encodeBody is a request's body as the host's messages carry it (OpenStack's and a source's
// alike): a json.RawMessage or []byte as is, anything else encoded; it must be valid JSON, since
// the message embeds it. op names the call in the error.
func encodeBody(op string, body any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch b := body.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return nil, fmt.Errorf("%s: encoding body: %w", op, err)
		}
	}
	if len(raw) > 0 && !json.Valid(raw) {
		return nil, errors.New(op + ": body is not valid JSON")
	}
	return raw, nil
}

// encodeResult writes a reconcile's result message. The usual results (Recorded, nothing, a few
// plain notes) are written directly: encoding/json's reflection costs a converged CR in the sandbox
// more than the rest of its answer. Anything else goes to encoding/json.
func encodeResult(res *Result) ([]byte, *abi.Error) {
	if res.recorded {
		return []byte(`{"unchanged":true}`), nil
	}
	if res.ExtraStatus != nil || res.Lifecycle != nil {
		return marshal(res)
	}
	if len(res.Notes) == 0 {
		return []byte(`{}`), nil
	}
	n := len(`{"notes":[]}`)
	for _, note := range res.Notes {
		if !plainString(note) {
			return marshal(res)
		}
		n += len(note) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, `{"notes":[`...)
	for i, note := range res.Notes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, note...)
		b = append(b, '"')
	}
	return append(b, "]}"...), nil
}

// plainString reports whether s is written as JSON exactly as it is between quotes, as
// encoding/json writes it: printable ASCII without quotes, backslashes or the characters it
// escapes for HTML.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
