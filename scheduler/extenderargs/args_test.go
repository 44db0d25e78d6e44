package extenderargs

import (
	"bytes"
	"reflect"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// argsBodies are ExtenderArgs bodies of the shapes kube-scheduler sends,
// and of shapes only encoding/json reads.
func argsBodies() map[string]string {
	p := `{"metadata":{"name":"probe","namespace":"bench","uid":"u-1","annotations":{"tessera.dev/gpu-type":"a100"}},` +
		`"spec":{"schedulerName":"tessera-scheduler","containers":[{"name":"cuda","image":"cuda",` +
		`"resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"8192"}}}]}}`
	return map[string]string{
		"names":                  `{"Pod":` + p + `,"Nodes":null,"NodeNames":["n1","n2","n-3"]}`,
		"names in any case":      `{"pod":` + p + `,"NODENAMES":["n1"]}`,
		"white space everywhere": " \n{ \"Pod\" :\t" + p + " , \"NodeNames\" : [ \"n1\" ,\r\n\"n2\" ] } \n",
		"no names":               `{"Pod":` + p + `,"NodeNames":null}`,
		"empty names":            `{"Pod":` + p + `,"NodeNames":[]}`,
		"whole nodes":            `{"Pod":` + p + `,"Nodes":{"items":[{"metadata":{"name":"n1"}},{"metadata":{"name":"n2"}}]}}`,
		"null pod":               `{"Pod":null,"NodeNames":["n1"]}`,
		"null run on":            `{"Pod":nullx,"NodeNames":nullnull}`,
		"empty object":           `{}`,
		"escaped name":           `{"NodeNames":["n\u0031","a\"b","\\"]}`,
		"bracket in a name":      `{"NodeNames":["a]b","c"]}`,
		"long names":             `{"NodeNames":["gpu-node-0001.zone-a.example.com","gpu-node-0002.zone-a.example.com"]}`,
		"long escaped name":      `{"NodeNames":["gpu-node-000\u0031","gpu-node-0002\\"]}`,
		"long non-ASCII name":    `{"NodeNames":["gpu-node-000ü"]}`,
		"control byte in a name": "{\"NodeNames\":[\"gpu-node-000\x01\"]}",
		"non-ASCII name":         `{"NodeNames":["nœud"]}`,
		"invalid UTF-8 name":     "{\"NodeNames\":[\"n\xff\"]}",
		"duplicate key":          `{"NodeNames":["a"],"nodenames":["b"]}`,
		"unknown key":            `{"Other":1,"NodeNames":["a"]}`,
		"escaped key":            `{"Node\u004eames":["a"]}`,
		"Kelvin sign in a key":   `{"NodeNames":["a"],"Nodes":null,"Pod":null,"\u212aind":1}`,
		"names not strings":      `{"NodeNames":[1,2]}`,
		"names not an array":     `{"NodeNames":"n1"}`,
		"trailing comma":         `{"NodeNames":["a",]}`,
		"missing comma":          `{"NodeNames":["a" "b"]}`,
		"unterminated":           `{"NodeNames":["a"`,
		"object after":           `{"NodeNames":["a"]}{}`,
		"garbage after":          `{"NodeNames":["a"]}x`,
		"pod of the wrong type":  `{"Pod":"p","NodeNames":["a"]}`,
		"invalid pod":            `{"Pod":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpumem":"lots"}}}]}},"NodeNames":["a"]}`,
		"pod cut short":          `{"Pod":{"metadata":{"name":"p"},"NodeNames":["a"]}`,
		"empty":                  ``,
		"null":                   `null`,
		"array":                  `[]`,
	}
}

// TestReadMatchesEncodingJSON checks that Args.Read reads every body as
// encoding/json does, and fails where it fails.
func TestReadMatchesEncodingJSON(t *testing.T) {
	// The shapes kube-scheduler sends, which must not need encoding/json.
	scanned := map[string]bool{"names": true, "names in any case": true, "white space everywhere": true, "no names": true,
		"empty names": true, "long names": true, "whole nodes": true, "null pod": true, "empty object": true}
	var reused Args
	for name, body := range argsBodies() {
		t.Run(name, func(t *testing.T) {
			checkRead(t, &Args{Poison: true}, []byte(body))
			checkRead(t, &reused, []byte(body))
			var args extenderv1.ExtenderArgs
			if _, ok := scanArgs([]byte(body), &args, nil); scanned[name] && !ok {
				t.Errorf("scanArgs(%q) left it to encoding/json", body)
			}
		})
	}
}

// FuzzRead checks Args.Read against encoding/json on any body, and that
// what a poisoned release leaves behind is never what the next body reads.
func FuzzRead(f *testing.F) {
	for _, body := range argsBodies() {
		f.Add([]byte(body))
	}
	a := &Args{Poison: true}
	f.Fuzz(func(t *testing.T, body []byte) { checkRead(t, a, body) })
}

// checkRead reads body into a and compares what it got with what
// encoding/json reads, then releases a.
func checkRead(t *testing.T, a *Args, body []byte) {
	t.Helper()
	defer a.Release()
	var want extenderv1.ExtenderArgs
	wantErr := Decode(bytes.NewReader(body), "ExtenderArgs", &want)
	err := a.Read(bytes.NewReader(body))
	if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("Read(%q) error %v, encoding/json %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(a.Pod(), want.Pod) {
		t.Fatalf("Read(%q) pod %+v, encoding/json %+v", body, a.Pod(), want.Pod)
	}
	var wantNames []string
	switch {
	case want.NodeNames != nil:
		wantNames = *want.NodeNames
	case want.Nodes != nil:
		for _, n := range want.Nodes.Items {
			wantNames = append(wantNames, n.Name)
		}
		if want.NodeNames == nil && !reflect.DeepEqual(a.Nodes(), want.Nodes) {
			t.Fatalf("Read(%q) nodes %+v, encoding/json %+v", body, a.Nodes(), want.Nodes)
		}
	}
	names := a.Names()
	if got := names.Borrow(); len(got) != len(wantNames) || (len(got) > 0 && !reflect.DeepEqual(got, wantNames)) {
		t.Fatalf("Read(%q) names %q, encoding/json %q", body, got, wantNames)
	}
	for i := range names.Len() {
		if names.At(i) != wantNames[i] || names.Keep(i) != wantNames[i] {
			t.Fatalf("Read(%q) name %d: At %q, Keep %q, want %q", body, i, names.At(i), names.Keep(i), wantNames[i])
		}
	}
}
