// Package doclinks checks the relative links of the repository's Markdown
// pages: that each linked file exists and that each #anchor names a heading
// of the page it points into, by GitHub's rules for heading anchors.
package doclinks
