package extender

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// answerStrings are node names and reasons, plain and in need of escaping.
var answerStrings = []string{
	"bench-node-00001", "", `quote " and backslash \`, "tab\tnewline\nreturn\rbell\x07nul\x00",
	"<html> & ünïcödé ✓", "line\u2028separator\u2029", "invalid \xff\xfe UTF-8 \xc3", "emoji 🎉", "\x7f delete",
}

// TestAnswersDecodeAsEncodingJSON checks that the written answers decode to
// what encoding/json's encoding of the wire types decodes to.
func TestAnswersDecodeAsEncodingJSON(t *testing.T) {
	for i := range answerStrings {
		s := answerStrings[i:]
		checkAnswers(t, s[0], s[len(s)-1], s...)
	}
	// Each byte that decides escaping, at every place of a word and past it.
	for _, c := range []byte{0x00, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xc3, 0xff} {
		for i := range 17 {
			b := []byte(strings.Repeat("n", 17))
			b[i] = c
			checkAnswers(t, string(b), string(b[:i+1]), string(b), string(b[i:]))
		}
	}
}

// FuzzAnswers checks the written answers against encoding/json on any
// names and reasons.
func FuzzAnswers(f *testing.F) {
	for i, s := range answerStrings {
		f.Add(s, answerStrings[(i+1)%len(answerStrings)], answerStrings[(i+2)%len(answerStrings)])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) { checkAnswers(t, a, b, a, b, c) })
}

// checkAnswers writes answers over the names: feasible, failed for reason,
// unresolvable; an error answer when reason says one; and scores.
func checkAnswers(t *testing.T, name, reason string, names ...string) {
	t.Helper()
	var a filterAnswer
	a.reset()
	a.feasible = names
	want := &extenderv1.ExtenderFilterResult{NodeNames: &a.feasible, FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{}}
	for _, n := range names {
		a.failed = append(a.failed, nodeReason{n, reason})
		want.FailedNodes[n] = reason
	}
	a.unresolvable = append(a.unresolvable, nodeReason{name, reason + name})
	want.FailedAndUnresolvableNodes[name] = reason + name
	checkFilterAnswer(t, &a, want)
	if reason != "" {
		checkFilterAnswer(t, &filterAnswer{err: reason}, &extenderv1.ExtenderFilterResult{Error: reason})
	}
	checkFilterAnswer(t, &filterAnswer{}, &extenderv1.ExtenderFilterResult{NodeNames: &[]string{}, FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{}})

	p := priorityAnswer{hosts: names}
	var list extenderv1.HostPriorityList
	for i, n := range names {
		p.scores = append(p.scores, int64(i))
		list = append(list, extenderv1.HostPriority{Host: n, Score: int64(i)})
	}
	checkDecodesAs(t, p.appendJSON(nil), list, &extenderv1.HostPriorityList{}, &extenderv1.HostPriorityList{})
}

func checkFilterAnswer(t *testing.T, a *filterAnswer, want *extenderv1.ExtenderFilterResult) {
	t.Helper()
	got, err := a.appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkDecodesAs(t, got, want, &extenderv1.ExtenderFilterResult{}, &extenderv1.ExtenderFilterResult{})
}

// checkDecodesAs decodes got into gotV and encoding/json's encoding of want
// into wantV, and compares them.
func checkDecodesAs(t *testing.T, got []byte, want, gotV, wantV any) {
	t.Helper()
	if len(got) == 0 || got[len(got)-1] != '\n' {
		t.Errorf("%q does not end in a newline, as encoding/json's Encoder's answers do", got)
	}
	encoded, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, gotV); err != nil {
		t.Fatalf("%q does not decode: %v", got, err)
	}
	if err := json.Unmarshal(encoded, wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("%q decodes to %+v, encoding/json's %q to %+v", got, gotV, encoded, wantV)
	}
}
