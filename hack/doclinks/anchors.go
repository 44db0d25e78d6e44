package doclinks

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Anchors returns every anchor a page's headings get on GitHub, with the
// explicit <a name> or <a id> anchors it sets. A heading's anchor is its
// text as shown, lower-cased, with punctuation and symbols dropped and each
// space turned into '-'; a repeated anchor gets "-1", "-2", ... in order.
func Anchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(page) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		anchor := slug
		if n := seen[slug]; n > 0 {
			anchor = slug + "-" + strconv.Itoa(n)
		}
		seen[slug]++
		anchors[anchor] = true
	}
	return anchors
}

// Slug is the anchor GitHub gives a heading written as text.
func Slug(heading string) string {
	shown := inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(shown) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
