package status

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCleanMakesPluginTextPrintable(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain text is kept", "flavor ha is in use", "flavor ha is in use"},
		{"line breaks and tabs become one space", "line one\r\nline two\tend", "line one line two end"},
		{"NUL and DEL", "a\x00b\x7fc", "a b c"},
		{"colour escapes are removed", "\x1b[31mred\x1b[0m text", "red text"},
		{"cursor movement is removed", "ok\x1b[2K\x1b[1Afaked", "okfaked"},
		{"a terminal title (OSC) is removed", "x\x1b]0;pwned\x07y", "xy"},
		{"C1 CSI is removed", "x\u009b31my", "xy"},
		{"bidi override", "abc\u202edcba", "abc dcba"},
		{"invalid UTF-8 is replaced", "bad \xff byte", "bad \uFFFD byte"},
		{"a trailing escape", "end\x1b", "end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Clean(c.in))
		})
	}
}

// 100,000 notes once made one 300 KB log line and status message; they are now bounded like a
// single log message, and the status still says how many were left out.
func TestNotesAreCleanedAndBounded(t *testing.T) {
	many := make([]string, 100000)
	for i := range many {
		many[i] = fmt.Sprintf("note %d\x1b[31m\n", i)
	}
	out := Notes(many)
	assert.Len(t, out, MaxNotes+1)
	assert.Equal(t, "note 0", out[0])
	assert.Equal(t, fmt.Sprintf("(%d more notes not shown)", 100000-MaxNotes), out[MaxNotes])

	huge := Notes([]string{strings.Repeat("x", 1<<20), "second"})
	assert.Len(t, huge[0], MaxMessage, "one note is cut to a message's length")
	assert.LessOrEqual(t, len(strings.Join(Notes([]string{strings.Repeat("y", 5000), strings.Repeat("z", 5000)}), "; ")),
		MaxNotesBytes+64)
	assert.Nil(t, Notes([]string{"", "\x00"}), "notes that clean to nothing are dropped")
}
