package hookenv

import (
	"bytes"
	"encoding/json"
	"strings"
)

// decodeStrict decodes one JSON value from an operator's variable, refusing unknown fields (a
// misspelt key must not silently mean "unset") and anything after the value: a json.Decoder
// alone stops after the first value, so `[...] [...]` would quietly drop the second half.
func decodeStrict(raw string, v any) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimLeft([]byte(raw[dec.InputOffset():]), " \t\r\n")) > 0 {
		// json.Unmarshal's words for it, with the offset of what follows the value.
		return json.Unmarshal([]byte(raw), new(json.RawMessage))
	}
	return nil
}
