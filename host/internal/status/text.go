package status

import (
	"fmt"
	"strings"
	"unicode"
)

// Plugin text (error messages, notes, reasons) reaches the CR's status, which `kubectl get` and
// `kubectl describe` print to a terminal, and the host's log lines. A plugin is not trusted to
// keep it printable or short, so the framework cleans and bounds it first (docs/reliability.md,
// "Plugin text").
const (
	// MaxNotes is how many notes one result keeps; the rest are counted.
	MaxNotes = 20
	// MaxNotesBytes bounds the notes of one result together, the size of one plugin log message
	// (the wasm host's per-message cap), so notes cannot carry more than a log line can.
	MaxNotesBytes = 8 << 10
)

// Clean makes plugin text safe to print: invalid UTF-8 is replaced, terminal escape sequences
// (ESC [ ... final byte, ESC ] ... BEL/ST) are removed, and every other control or format
// character (NUL, line breaks, tabs, bidi overrides) becomes a space; runs of spaces collapse.
func Clean(text string) string {
	if printableASCII(text) {
		return text // every status message a converged CR compares, without a rune decoded
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	if !strings.ContainsFunc(text, unsafeRune) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	rs := []rune(text)
	space := false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == 0x1b || r == 0x9b { // ESC or CSI: drop the whole sequence
			i = skipEscape(rs, i)
			continue
		}
		if unsafeRune(r) || r == ' ' {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}

// printableASCII reports text made of printable ASCII alone, which Clean keeps as it is.
func printableASCII(text string) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// skipEscape returns the index of the last rune of the escape sequence starting at rs[i].
func skipEscape(rs []rune, i int) int {
	if rs[i] == 0x1b {
		if i+1 >= len(rs) {
			return i
		}
		switch rs[i+1] {
		case '[':
			i++
		case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ESC \
			for j := i + 2; j < len(rs); j++ {
				if rs[j] == 0x07 {
					return j
				}
				if rs[j] == 0x1b && j+1 < len(rs) && rs[j+1] == '\\' {
					return j + 1
				}
			}
			return len(rs) - 1
		default:
			return i + 1 // a two-character escape
		}
	}
	// CSI: parameter and intermediate bytes, then one final byte in @..~.
	for j := i + 1; j < len(rs); j++ {
		if rs[j] >= 0x40 && rs[j] <= 0x7e {
			return j
		}
		if rs[j] < 0x20 || rs[j] > 0x3f && rs[j] < 0x40 {
			return j - 1
		}
	}
	return len(rs) - 1
}

// Notes cleans a result's notes and keeps at most MaxNotes of them within MaxNotesBytes; what is
// left out is counted in a last note, so the status still says that more needs manual action.
func Notes(notes []string) []string {
	var out []string
	size := 0
	for i, n := range notes {
		n = Text(n)
		if n == "" {
			continue
		}
		if len(out) == MaxNotes || size+len(n) > MaxNotesBytes {
			return append(out, fmt.Sprintf("(%d more notes not shown)", len(notes)-i))
		}
		out = append(out, n)
		size += len(n)
	}
	return out
}

// Text is plugin text cleaned and cut to MaxMessage characters, for a status message or a log
// line.
func Text(text string) string {
	return Truncate(Clean(text), MaxMessage)
}
