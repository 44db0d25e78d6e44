package admission

import (
	"strconv"
	"strings"
)

// patchOp is one RFC 6902 JSON patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// pointer joins RFC 6901 reference tokens into a JSON pointer, escaping
// "~" and "/" (resource names such as nvidia.com/gpu contain a slash).
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		// "~" first, so that the "~" of "~1" is not escaped again.
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func index(i int) string { return strconv.Itoa(i) }
