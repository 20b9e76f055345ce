package abi

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// The rules the host applies to a module's metadata and results (docs/abi.md, "metadata" and
// "result"). The names end up in every log line (name), in the User-Agent of OpenStack requests,
// in status messages (noun) and in environment variable names (env_prefix): a guest must not be
// able to put a megabyte or a line break there. None uses a regexp: the PDK links these rules into
// every plugin, and a regexp costs a Go module about 200 KB.

// Limits of the metadata's and the results' fields.
const (
	// MaxLabel is the longest name, env prefix, binding name, source name and status key.
	MaxLabel = 63
	// MaxStatusKeys bounds metadata status_keys, and prune_keys too.
	MaxStatusKeys       = 16
	MaxNounBytes        = 64
	MaxVersionBytes     = 64
	MaxDescriptionBytes = 512
	MaxSourceBytes      = 512
	// MaxStatusIDBytes bounds status.id: an OpenStack id is a UUID; a guest must not write a
	// megabyte.
	MaxStatusIDBytes = 255
	// MaxErrorMessage bounds a plugin's error text: the host logs it for every failed CR and the
	// CR's status keeps only 2,048 characters of it anyway; the host cuts what is longer.
	MaxErrorMessage = 4096
	// MaxReasonBytes bounds a condition reason.
	MaxReasonBytes = 128
	// MaxPathBytes bounds the path (and a source's URL) of a request.
	MaxPathBytes = 4096
)

// CheckName reports whether name is a lower-case DNS label: letters, digits and '-', starting and
// ending with a letter or digit, at most MaxLabel bytes.
func CheckName(name string) error {
	if !label(name, MaxLabel, lowerDigit, lowerDigit, func(c byte) bool { return lowerDigit(c) || c == '-' }) {
		return fmt.Errorf("name %q is not a lower-case DNS label (letters, digits, '-', at most 63)", Cut(name))
	}
	return nil
}

// CheckEnvPrefix reports whether prefix is an upper-case variable name: an upper-case letter,
// then upper-case letters, digits and '_', at most MaxLabel bytes.
func CheckEnvPrefix(prefix string) error {
	upper := func(c byte) bool { return c >= 'A' && c <= 'Z' }
	rest := func(c byte) bool { return upper(c) || digit(c) || c == '_' }
	if !label(prefix, MaxLabel, upper, rest, rest) {
		return fmt.Errorf("env_prefix %q is not an upper-case variable name (A-Z, 0-9, '_', at most 63)", Cut(prefix))
	}
	return nil
}

// CheckBindingName reports whether name is a shell-operator binding name: letters, digits, '-',
// '_' and '.', starting and ending with a letter or digit, at most MaxLabel bytes.
func CheckBindingName(name string) error {
	alnum := func(c byte) bool { return letter(c) || digit(c) }
	if !label(name, MaxLabel, alnum, alnum, func(c byte) bool { return alnum(c) || c == '-' || c == '_' || c == '.' }) {
		return fmt.Errorf("binding_name %q is not a name of letters, digits, '-', '_' or '.', at most 63", Cut(name))
	}
	return nil
}

// CheckSourceName reports whether name is a source's name: a lower-case DNS label that starts
// with a letter.
func CheckSourceName(name string) error {
	lower := func(c byte) bool { return c >= 'a' && c <= 'z' }
	if !label(name, MaxLabel, lower, lowerDigit, func(c byte) bool { return lowerDigit(c) || c == '-' }) {
		return fmt.Errorf("source name %q is not a lower-case DNS label starting with a letter", Cut(name))
	}
	return nil
}

// CheckDescriptions applies the rules for the metadata's text fields: noun and description are
// printable text, version and source printable words (no spaces), each within its limit.
func CheckDescriptions(noun, version, description, source string) error {
	switch {
	case len(noun) > MaxNounBytes || !Printable(noun):
		return fmt.Errorf("noun %q is not printable text of at most %d bytes", Cut(noun), MaxNounBytes)
	case len(version) > MaxVersionBytes || !word(version):
		return fmt.Errorf("version %q is not a word of printable characters of at most %d bytes", Cut(version), MaxVersionBytes)
	case len(description) > MaxDescriptionBytes || !Printable(description):
		return fmt.Errorf("description %q is not printable text of at most %d bytes", Cut(description), MaxDescriptionBytes)
	case len(source) > MaxSourceBytes || !word(source):
		return fmt.Errorf("source %q is not a URL or reference of printable characters of at most %d bytes", Cut(source), MaxSourceBytes)
	}
	return nil
}

// CheckStatusKeys applies the rules for status_keys: the only top-level status keys a plugin
// reads, which its reconcile inputs then carry. Not with skip_status; the rules of every key list
// (checkKeys); "id" among them for a lifecycle plugin, which finds its resource by status.id.
func CheckStatusKeys(keys []string, skipStatus, lifecycle bool) error {
	if len(keys) == 0 {
		return nil
	}
	if skipStatus {
		return errors.New("status_keys is set but so is skip_status; a plugin that reads no status lists no keys")
	}
	seen, err := checkKeys("status_keys", keys)
	if err != nil {
		return err
	}
	if lifecycle && !seen["id"] {
		return errors.New(`status_keys must include "id": a lifecycle plugin finds its resource by status.id`)
	}
	return nil
}

// CheckPruneKeys applies the rules for prune_keys: the only top-level spec keys a plugin's prune
// reads of its desired specs. Only with a prune (hasPrune); the rules of every key list
// (checkKeys).
func CheckPruneKeys(keys []string, hasPrune bool) error {
	if len(keys) == 0 {
		return nil
	}
	if !hasPrune {
		return errors.New("prune_keys is set but has_prune is not; only a prune reads them")
	}
	_, err := checkKeys("prune_keys", keys)
	return err
}

// checkKeys applies the rules of a key list: at most MaxStatusKeys keys of 1 to MaxLabel
// printable characters without spaces, none twice. It returns the keys as a set.
func checkKeys(field string, keys []string) (map[string]bool, error) {
	if len(keys) > MaxStatusKeys {
		return nil, fmt.Errorf("%s lists %d keys; at most %d", field, len(keys), MaxStatusKeys)
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k == "" || len(k) > MaxLabel || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("%s: key %q is not 1 to 63 printable characters without spaces", field, Cut(k))
		}
		if seen[k] {
			return nil, fmt.Errorf("%s: key %q is listed twice", field, k)
		}
		seen[k] = true
	}
	return seen, nil
}

// The values of a lifecycle status (Lifecycle): the Progressing condition's reasons and the
// Available condition's statuses.
const (
	ReasonSuccess              = "Success"
	ReasonProgressing          = "Progressing"
	ReasonTransientError       = "TransientError"
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonUnrecoverableError   = "UnrecoverableError"

	AvailableTrue    = "True"
	AvailableFalse   = "False"
	AvailableUnknown = "Unknown"
)

// Check applies the rules for a lifecycle status, which the CR's status must be able to hold: a
// known reason and Available status, an ID of at most MaxStatusIDBytes printable bytes, no
// negative requeue, and a resource that is a JSON object (or none), as decoded from the plugin's
// output. A nil l is no status.
func (l *Lifecycle) Check() error {
	if l == nil {
		return nil
	}
	switch l.Reason {
	case ReasonSuccess, ReasonProgressing, ReasonTransientError, ReasonInvalidConfiguration, ReasonUnrecoverableError:
	default:
		return fmt.Errorf("lifecycle.reason %q is not Success, Progressing, TransientError, InvalidConfiguration or UnrecoverableError", Cut(l.Reason))
	}
	switch {
	case l.Available != AvailableTrue && l.Available != AvailableFalse && l.Available != AvailableUnknown:
		return fmt.Errorf("lifecycle.available %q is not True, False or Unknown", Cut(l.Available))
	case len(l.ID) > MaxStatusIDBytes || !Printable(l.ID):
		return fmt.Errorf("lifecycle.id %q is not printable text of at most %d bytes", Cut(l.ID), MaxStatusIDBytes)
	case l.RequeueSeconds < 0:
		return fmt.Errorf("lifecycle.requeue_seconds %d is negative", l.RequeueSeconds)
	}
	if _, ok := l.Resource.(map[string]any); l.Resource != nil && !ok {
		return errors.New("lifecycle.resource must be a JSON object")
	}
	return nil
}

// ValidReason reports whether reason can be a condition reason as the Kubernetes API server
// accepts one, kept short: a letter, then letters, digits, '_', ',' and ':', not ending with ','
// or ':', at most MaxReasonBytes.
func ValidReason(reason string) bool {
	return label(reason, MaxReasonBytes, letter, func(c byte) bool { return letter(c) || digit(c) || c == '_' },
		func(c byte) bool { return letter(c) || digit(c) || c == '_' || c == ',' || c == ':' })
}

// Printable is text without control characters or line breaks.
func Printable(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// word is printable text without spaces: a version, a URL, an image reference.
func word(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) < 0
}

// Cut shortens a refused value for an error message.
func Cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// label reports whether s is 1 to max bytes, its first byte accepted by first, its last (when
// there are two or more) by last and every byte between by middle.
func label(s string, max int, first, last, middle func(byte) bool) bool {
	if s == "" || len(s) > max || !first(s[0]) || (len(s) > 1 && !last(s[len(s)-1])) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !middle(s[i]) {
			return false
		}
	}
	return true
}

func letter(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func digit(c byte) bool      { return c >= '0' && c <= '9' }
func lowerDigit(c byte) bool { return c >= 'a' && c <= 'z' || digit(c) }
