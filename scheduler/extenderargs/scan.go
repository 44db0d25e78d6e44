package extenderargs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// scanArgs decodes body as encoding/json would into args when body is one
// object whose keys are Pod, Nodes and NodeNames, each at most once, and
// whose node names are plain ASCII with nothing to unescape; keys match
// in any case, as encoding/json matches field names. The pod and
// the nodes are decoded by encoding/json; the names are appended to names,
// which args.NodeNames then points to, as strings that share body's memory,
// so that 5,000 names cost no allocation (see nameStrings). It reports
// false for any other body, leaving args to be decoded again.
func scanArgs(body []byte, args *extenderv1.ExtenderArgs, names []string) ([]string, bool) {
	*args = extenderv1.ExtenderArgs{}
	s := scanner{b: body}
	if !s.consume('{') {
		return names, false
	}
	if s.consume('}') {
		return names, s.end()
	}
	var seenPod, seenNodes, seenNames bool
	for {
		key, ok := s.plainString()
		if !ok || !s.consume(':') {
			return names, false
		}
		switch {
		case !seenPod && bytes.EqualFold(key, []byte("Pod")):
			seenPod = true
			if args.Pod, ok = scanObject[corev1.Pod](&s); !ok {
				return names, false
			}
		case !seenNodes && bytes.EqualFold(key, []byte("Nodes")):
			seenNodes = true
			if args.Nodes, ok = scanObject[corev1.NodeList](&s); !ok {
				return names, false
			}
		case !seenNames && bytes.EqualFold(key, []byte("NodeNames")):
			seenNames = true
			if s.null() {
				break
			}
			start := len(names)
			if names, ok = s.names(names); !ok {
				return names[:start], false
			}
			list := names[start:len(names):len(names)]
			if list == nil {
				list = []string{} // as encoding/json decodes []
			}
			args.NodeNames = &list
		default:
			return names, false
		}
		if s.consume('}') {
			return names, s.end()
		}
		if !s.consume(',') {
			return names, false
		}
	}
}

// scanObject decodes the next value with encoding/json, as a field of type
// *T: null is nil.
func scanObject[T any](s *scanner) (*T, bool) {
	if s.null() {
		return nil, true
	}
	raw, ok := s.value()
	if !ok {
		return nil, false
	}
	v := new(T)
	if json.Unmarshal(raw, v) != nil {
		return nil, false
	}
	return v, true
}

// scanner reads the plain parts of a JSON text; whatever it does not
// handle it reports as not ok, never as a different value.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume reads the byte c after optional white space.
func (s *scanner) consume(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// null reads null if it comes next. Whatever follows is read on as JSON,
// so that such as nullx fails as a whole.
func (s *scanner) null() bool {
	s.space()
	if !bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		return false
	}
	s.i += len("null")
	return true
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// plainString reads a string of ASCII without escapes or control
// characters and returns its contents.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	n := bytes.IndexByte(s.b[s.i:], '"')
	if n < 0 {
		return nil, false
	}
	str := s.b[s.i : s.i+n]
	k := 0
	for ; k+8 <= len(str); k += 8 {
		if !PlainWord(binary.LittleEndian.Uint64(str[k:])) {
			return nil, false
		}
	}
	for _, c := range str[k:] {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return nil, false
		}
	}
	s.i += n + 1
	return str, true
}

// names reads an array of plain strings, appending them to names as
// strings that share s.b's memory.
func (s *scanner) names(names []string) ([]string, bool) {
	if !s.consume('[') {
		return names, false
	}
	if s.consume(']') {
		return names, true
	}
	// A plain name holds no ']', so the array ends at the first one; if
	// that one is inside a string, the string ends past it and the scan
	// fails.
	start := s.i
	n := bytes.IndexByte(s.b[start:], ']')
	if n < 0 {
		return names, false
	}
	all := nameStrings(s.b[start : start+n])
	for {
		name, ok := s.plainString()
		if !ok || s.i > start+n {
			return names, false
		}
		from := s.i - 1 - len(name) - start
		names = append(names, all[from:from+len(name)])
		if s.consume(']') {
			return names, true
		}
		if !s.consume(',') {
			return names, false
		}
	}
}

// value reads any JSON value and returns its text, which it checks only
// as far as finding where it ends.
func (s *scanner) value() ([]byte, bool) {
	s.space()
	start := s.i
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch c {
		case '"':
			if !s.skipString() {
				return nil, false
			}
			if depth == 0 {
				return s.b[start:s.i], true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return s.b[start:s.i], s.i > start
			}
			depth--
			if depth == 0 {
				s.i++
				return s.b[start:s.i], true
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return s.b[start:s.i], s.i > start
			}
		}
		s.i++
	}
	return s.b[start:s.i], depth == 0 && s.i > start
}

// skipString moves past the string that starts at i.
func (s *scanner) skipString() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return true
		}
	}
	return false
}

// nameStrings returns b as a string without copying it: the names a call
// reads are views of its body, which Args lends out through Names only.
// At 5,000 names a copy was 100 KB a call, enough to start a garbage
// collection every thousand calls, and the calls that ran during one made
// the 99th percentile.
func nameStrings(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
