package doclinks

import (
	"reflect"
	"testing"
)

func TestSlug(t *testing.T) {
	tests := []struct {
		name, heading, want string
	}{
		{name: "lower-cased, spaces to hyphens", heading: "Which mode to run", want: "which-mode-to-run"},
		{name: "code spans keep their text", heading: "Try it: `hack/local-up.sh`", want: "try-it-hacklocal-upsh"},
		{name: "punctuation and symbols dropped", heading: "Rows a–d: 1,000 nodes × 8 GPUs", want: "rows-ad-1000-nodes--8-gpus"},
		{name: "parentheses dropped, underscores kept", heading: "The DRA allocator (`hack/drabench`, `max_pods`)", want: "the-dra-allocator-hackdrabench-max_pods"},
		{name: "links keep their text", heading: "See [DRA](dra.md) here", want: "see-dra-here"},
		{name: "emphasis dropped", heading: "**Bold** move", want: "bold-move"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Slug(tc.heading); got != tc.want {
				t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
			}
		})
	}
}

func TestAnchors(t *testing.T) {
	page := "# Title\n\n## Setup\n\n```sh\n# not a heading\n```\n\n## Setup\n\n### Closed ##\n<a name=\"custom\"></a>\n"
	want := map[string]bool{"title": true, "setup": true, "setup-1": true, "closed": true, "custom": true}
	if got := Anchors(page); !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors() = %v, want %v", got, want)
	}
}

func TestRelativeLinks(t *testing.T) {
	page := "See [modes](modes.md#extender), [here](#setup) and ![pic](img/a.png \"A\").\n" +
		"Not [web](https://example.com) nor `[code](x.md)`.\n" +
		"```\n[fenced](y.md)\n```\n" +
		"[ref]: ../README.md#tessera\n"
	want := []Link{
		{Line: 1, Target: "modes.md#extender", File: "modes.md", Anchor: "extender"},
		{Line: 1, Target: "#setup", File: "", Anchor: "setup"},
		{Line: 1, Target: "img/a.png", File: "img/a.png"},
		{Line: 6, Target: "../README.md#tessera", File: "../README.md", Anchor: "tessera"},
	}
	if got := RelativeLinks(page); !reflect.DeepEqual(got, want) {
		t.Errorf("RelativeLinks() = %+v, want %+v", got, want)
	}
}
