package pdk

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// maxMessage bounds an error message so a CR's status stays readable.
const maxMessage = 512

// errorShapes is every error body shape ErrorMessage knows, decoded in one pass.
type errorShapes struct {
	// Neutron: {"NeutronError": {"type", "message", "detail"}}
	NeutronError *messageField `json:"NeutronError"`
	// Ironic: {"error_message": "<JSON text of {faultstring, debuginfo}>"} or the object itself.
	ErrorMessage json.RawMessage `json:"error_message"`
	// Keystone and most others: {"error": {"code", "title", "message"}}
	Error *messageField `json:"error"`
	// Nova-style: {"badRequest": {"message", "code"}} and friends.
	BadRequest         *messageField `json:"badRequest"`
	ItemNotFound       *messageField `json:"itemNotFound"`
	ConflictingRequest *messageField `json:"conflictingRequest"`
	Forbidden          *messageField `json:"forbidden"`
	// A bare WSME fault or message.
	Faultstring string `json:"faultstring"`
	Message     string `json:"message"`
}

type messageField struct {
	Message string `json:"message"`
}

func (m *messageField) text() string {
	if m == nil {
		return ""
	}
	return m.Message
}

// ErrorMessage extracts the explanation from an OpenStack error body: Neutron's NeutronError,
// Ironic's error_message (a JSON string holding a faultstring, or the object itself), the
// {"error": {"message"}} of Keystone and others, Nova's named faults, a bare faultstring or
// message; any other body (JSON of another shape included) is its own text. Whitespace runs become one space and the result is
// bounded to 512 bytes, so the message reads well in a CR's status.
func ErrorMessage(body []byte) string {
	var s errorShapes
	msg := string(body)
	if json.Unmarshal(body, &s) == nil {
		for _, m := range []string{s.NeutronError.text(), ironicFault(s.ErrorMessage), s.Error.text(),
			s.BadRequest.text(), s.ItemNotFound.text(), s.ConflictingRequest.text(), s.Forbidden.text(),
			s.Faultstring, s.Message} {
			if m != "" {
				msg = m
				break
			}
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxMessage {
		cut := maxMessage - 3
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut-- // never split a character
		}
		msg = msg[:cut] + "..."
	}
	return msg
}

// ironicFault reads Ironic's error_message, which is either an object or a JSON string holding
// one, and returns its faultstring (or the whole text when it has none).
func ironicFault(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var fault struct {
		Faultstring string `json:"faultstring"`
	}
	if json.Unmarshal(raw, &fault) == nil && fault.Faultstring != "" {
		return fault.Faultstring
	}
	var inner string
	if json.Unmarshal(raw, &inner) == nil {
		if json.Unmarshal([]byte(inner), &fault) == nil && fault.Faultstring != "" {
			return fault.Faultstring
		}
		return inner
	}
	return string(raw)
}
