package extender

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// argsBodies are ExtenderArgs bodies of the shapes kube-scheduler sends,
// and of shapes only encoding/json reads.
func argsBodies() map[string]string {
	pod, _ := json.Marshal(probePod())
	p := string(pod)
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

// TestDecodeArgsMatchesEncodingJSON checks that decodeArgs reads every
// body as encoding/json does, and fails where it fails.
func TestDecodeArgsMatchesEncodingJSON(t *testing.T) {
	// The shapes kube-scheduler sends, which must not need encoding/json.
	scanned := map[string]bool{"names": true, "names in any case": true, "white space everywhere": true, "no names": true,
		"empty names": true, "long names": true, "whole nodes": true, "null pod": true, "empty object": true}
	for name, body := range argsBodies() {
		t.Run(name, func(t *testing.T) {
			checkDecodeArgs(t, []byte(body))
			var args extenderv1.ExtenderArgs
			if _, ok := scanArgs([]byte(body), &args, nil); scanned[name] && !ok {
				t.Errorf("scanArgs(%q) left it to encoding/json", body)
			}
		})
	}
}

// FuzzDecodeArgs checks decodeArgs against encoding/json on any body.
func FuzzDecodeArgs(f *testing.F) {
	for _, body := range argsBodies() {
		f.Add([]byte(body))
	}
	f.Fuzz(checkDecodeArgs)
}

func checkDecodeArgs(t *testing.T, body []byte) {
	var want extenderv1.ExtenderArgs
	wantErr := decode(bytes.NewReader(body), "ExtenderArgs", &want)
	var got extenderv1.ExtenderArgs
	names, err := decodeArgs(body, &got, []string{"kept"})
	if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("decodeArgs(%q) error %v, encoding/json %v", body, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeArgs(%q) = %+v, encoding/json %+v", body, got, want)
	}
	if names[0] != "kept" {
		t.Fatalf("decodeArgs(%q) overwrote the names before its own", body)
	}
}
