package harness

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteGrid writes a title, a table and notes below it, as text with
// aligned columns or as Markdown.
func WriteGrid(w io.Writer, title string, header []string, rows [][]string, notes []string, markdown bool) error {
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n")
		if markdown {
			b.WriteString("\n")
		}
	}
	if markdown {
		b.WriteString("| " + strings.Join(header, " | ") + " |\n")
		b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
		for _, row := range rows {
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	} else {
		all := append([][]string{header}, rows...)
		widths := make([]int, len(header))
		for _, row := range all {
			for i, c := range row {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
		for _, row := range all {
			line := ""
			for i, c := range row {
				if i > 0 {
					line += "  "
				}
				line += c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatDuration writes a latency in milliseconds, or "—" when nothing was observed.
func FormatDuration(d time.Duration, count uint64) string {
	if count == 0 {
		return "—"
	}
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.2f ms", ms)
	}
}

// FormatBytes writes a size in MiB, or "—" when it was not measured.
func FormatBytes(n int64) string {
	if n <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// FormatCount writes a count, or "—" for a negative one (not applicable).
func FormatCount(n int) string {
	if n < 0 {
		return "—"
	}
	return fmt.Sprintf("%d", n)
}
