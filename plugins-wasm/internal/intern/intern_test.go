package intern

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestOfSharesOneCopyPerDistinctString(t *testing.T) {
	tab := Table{}
	a := tab.Of(strings.Repeat("x", 40))
	b := tab.Of(strings.Repeat("x", 40))
	c := tab.Of(strings.Repeat("y", 40))
	assert.Equal(t, a, b)
	assert.Equal(t, unsafe.StringData(a), unsafe.StringData(b), "the second copy is the first")
	assert.NotEqual(t, unsafe.StringData(a), unsafe.StringData(c))
	assert.Equal(t, "", tab.Of(""))
	assert.Len(t, tab, 2, "the empty string is not kept")
}
