package metrics

import (
	"bufio"
	"strconv"
)

// family is one gauge family written straight in the Prometheus text
// format, without building a client_golang metric for each series.
type family struct {
	name, help string
	// labels are the label names in the order their values are given,
	// which must be sorted, as the text format is everywhere else.
	labels []string
}

// header writes the family's HELP and TYPE lines.
func (f *family) header(w *bufio.Writer) {
	w.WriteString("# HELP ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(f.help)
	w.WriteString("\n# TYPE ")
	w.WriteString(f.name)
	w.WriteString(" gauge\n")
}

// sample writes one series; buf is scratch space it returns for reuse.
func (f *family) sample(w *bufio.Writer, buf []byte, value float64, labelValues ...string) []byte {
	buf = append(buf[:0], f.name...)
	for i, name := range f.labels {
		if i == 0 {
			buf = append(buf, '{')
		} else {
			buf = append(buf, ',')
		}
		buf = append(buf, name...)
		buf = append(buf, '=', '"')
		buf = appendEscaped(buf, labelValues[i])
		buf = append(buf, '"')
	}
	if len(f.labels) > 0 {
		buf = append(buf, '}')
	}
	buf = append(buf, ' ')
	// The same form expfmt writes, so a value reads the same either way.
	buf = strconv.AppendFloat(buf, value, 'g', -1, 64)
	buf = append(buf, '\n')
	w.Write(buf)
	return buf
}

// appendEscaped appends a label value escaped as the text format wants.
func appendEscaped(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			buf = append(buf, '\\', '\\')
		case '"':
			buf = append(buf, '\\', '"')
		case '\n':
			buf = append(buf, '\\', 'n')
		default:
			buf = append(buf, c)
		}
	}
	return buf
}
