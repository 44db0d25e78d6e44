package doclinks

import (
	"regexp"
	"strings"
)

var (
	linkTarget = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refTarget  = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// Link is one relative link of a page: the file it names (empty for a link
// into the same page) and the anchor after '#' (empty for none).
type Link struct {
	Line   int
	Target string
	File   string
	Anchor string
}

// RelativeLinks returns a page's links that point into the repository:
// inline links and images, and reference definitions, outside code blocks
// and code spans. Links with a scheme (https:, mailto:) are left out.
func RelativeLinks(page string) []Link {
	var links []Link
	for i, line := range proseLines(page) {
		if line == "" {
			continue
		}
		line = codeSpan.ReplaceAllStringFunc(line, func(span string) string {
			// A code span inside a link's text keeps the link.
			return strings.Repeat("x", len(span))
		})
		var targets []string
		for _, m := range linkTarget.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refTarget.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if scheme.MatchString(t) || strings.HasPrefix(t, "//") {
				continue
			}
			file, anchor, _ := strings.Cut(t, "#")
			links = append(links, Link{Line: i + 1, Target: t, File: file, Anchor: anchor})
		}
	}
	return links
}

// proseLines returns a page's lines with those inside fenced code blocks
// blanked, so that line numbers stay those of the page.
func proseLines(page string) []string {
	lines := strings.Split(page, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}
