package pdk

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The host's per-CR and prune inputs are split here into their members with one light pass, so
// that encoding/json only ever sees the parts a plugin reads. In wasm under the host's termination
// checks every loop iteration and function call of the guest leaves compiled code for the host's
// check, and encoding/json pays several per input byte (it validates the whole input before it
// decodes it, calling a scanner function per byte both times): decoding a converged runbook's
// 1.3 KB input that way cost about 1 ms, as much as the rest of its reconcile together
// (docs/benchmarks.md, "Guest-side fixes"). The spec is then decoded once, by the plugin, from a
// slice of the input; nothing copies it.
//
// The splitter only finds where each member's value starts and ends; every part it hands on is
// still decoded (and so validated) by encoding/json. Anything it does not expect (escaped keys,
// a repeated key, bytes after the object) makes the caller fall back to decoding the whole input
// with encoding/json, so results and error messages for odd input are what they always were.

// errUnexpected sends the caller to the encoding/json path.
var errUnexpected = errors.New("pdk: input is not in the host's plain form")

// splitObject returns the members of the JSON object b by key, each value as the slice of b it
// occupies. Keys must be plain (no escapes) and distinct.
func splitObject(b []byte) (map[string][]byte, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errUnexpected
	}
	members := make(map[string][]byte, 4)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return members, trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, errUnexpected
		}
		start := i + 1
		end := start
		for end < len(b) && b[end] != '"' && b[end] != '\\' {
			end++
		}
		if end >= len(b) || b[end] != '"' {
			return nil, errUnexpected
		}
		key := string(b[start:end])
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return nil, errUnexpected
		}
		i = skipSpace(b, i+1)
		vend, err := skipValue(b, i)
		if err != nil {
			return nil, err
		}
		if _, dup := members[key]; dup {
			return nil, errUnexpected
		}
		members[key] = b[i:vend]
		i = skipSpace(b, vend)
		if i >= len(b) {
			return nil, errUnexpected
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return members, trailing(b, i+1)
		default:
			return nil, errUnexpected
		}
	}
}

// splitArray returns the elements of the JSON array b, each as the slice of b it occupies.
func splitArray(b []byte) ([]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errUnexpected
	}
	var out []json.RawMessage
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return []json.RawMessage{}, trailing(b, i+1)
	}
	for {
		end, err := skipValue(b, i)
		if err != nil {
			return nil, err
		}
		out = append(out, json.RawMessage(b[i:end:end]))
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, errUnexpected
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, trailing(b, i+1)
		default:
			return nil, errUnexpected
		}
	}
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errUnexpected
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i]: objects and arrays by their
// nesting (strings inside them skipped whole, escapes included), strings by their closing quote,
// anything else (numbers, true, false, null) up to the next delimiter. It checks structure only;
// the value's own syntax is left to whoever decodes it.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errUnexpected
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errUnexpected
	case '}', ']', ',', ':':
		return 0, errUnexpected
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\n', '\t', '\r':
			if i == start {
				return 0, errUnexpected
			}
			return i, nil
		}
		i++
	}
	return i, nil
}

// skipString returns the index after the string starting at the quote b[i].
func skipString(b []byte, i int) (int, error) {
	start := i + 1
	for i = start; i < len(b); {
		// IndexByte is a loop of the runtime's own (assembly, for wasm too): in the sandbox a
		// Go loop pays a termination check per byte, and a spec is mostly strings.
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			break
		}
		end := i + j
		// Escaped when an odd number of backslashes precede it.
		n := 0
		for k := end - 1; k >= start && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return end + 1, nil
		}
		i = end + 1
	}
	return 0, errUnexpected
}

// decodeReconcile decodes the host's reconcile (and delete) input: the object and status from
// their own slices, the spec kept as the slice of the input it occupies. With skipStatus (the
// plugin declared Metadata.SkipStatus) a status a host sends anyway is not decoded.
func decodeReconcile(input []byte, msg *reconcileMessage, skipStatus bool) error {
	err := decodeReconcileMembers(input, msg, skipStatus)
	if skipStatus {
		msg.Status = nil
	}
	return err
}

func decodeReconcileMembers(input []byte, msg *reconcileMessage, skipStatus bool) error {
	members, err := splitObject(input)
	if err != nil {
		return slowUnmarshal(input, msg)
	}
	for key, raw := range members {
		switch key {
		case "abi_version":
			err = decodeJSON(raw, &msg.ABIVersion, false)
		case "object":
			err = decodeJSON(raw, &msg.Object, false)
		case "spec":
			msg.Spec = json.RawMessage(raw[:len(raw):len(raw)])
		case "credentials":
			err = decodeJSON(raw, &msg.Credentials, false)
		case "status":
			if skipStatus {
				break
			}
			if v, ok := decodePlain(raw); ok {
				if m, isMap := v.(map[string]any); isMap {
					msg.Status = m
					break
				}
			}
			err = slowUnmarshal(raw, &msg.Status)
		default:
			// encoding/json matches keys case-insensitively; let it judge what this is.
			err = errUnexpected
		}
		if err != nil {
			// The whole input again, so the error reads as it always did.
			*msg = reconcileMessage{}
			return slowUnmarshal(input, msg)
		}
	}
	return nil
}

// slowUnmarshal is json.Unmarshal, counted as a decode the PDK's own decoders did not take.
func slowUnmarshal(b []byte, v any) error {
	slowDecodes.Add(1)
	return json.Unmarshal(b, v)
}

// decodePrune decodes the host's prune input, each desired spec kept as the slice of the input it
// occupies.
func decodePrune(input []byte, msg *pruneMessage) error {
	members, err := splitObject(input)
	if err != nil {
		return slowUnmarshal(input, msg)
	}
	for key, raw := range members {
		switch key {
		case "abi_version":
			err = decodeJSON(raw, &msg.ABIVersion, false)
		case "credentials":
			err = decodeJSON(raw, &msg.Credentials, false)
		case "desired_specs":
			if string(raw) != "null" {
				msg.DesiredSpecs, err = splitArray(raw)
			}
		case "authoritative_empty":
			err = decodeJSON(raw, &msg.AuthoritativeEmpty, false)
		default:
			err = errUnexpected
		}
		if err != nil {
			*msg = pruneMessage{}
			return slowUnmarshal(input, msg)
		}
	}
	return nil
}
