package extenderargs

import (
	"bytes"
	"io"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// poisonByte overwrites a released body in tests: names kept by mistake
// read as a run of it.
const poisonByte = 0xA5

// Args is the ExtenderArgs of one filter or prioritize call and the body
// they were read from. The zero value is ready to Read; after a call,
// Release readies it for the next.
type Args struct {
	body  bytes.Buffer
	args  extenderv1.ExtenderArgs
	names []string
	// owned are the names of whole nodes, or names encoding/json read,
	// which share no memory with the body.
	owned []string
	// Poison, set by tests, makes Release overwrite the body.
	Poison bool
}

// Read reads a whole body from r (which should bound its size, as
// http.MaxBytesReader does) and decodes it as encoding/json would. Its
// errors say what was wrong in words a person can act on.
func (a *Args) Read(r io.Reader) error {
	a.reset()
	if err := readBody(&a.body, r); err != nil {
		return err
	}
	body := a.body.Bytes()
	var ok bool
	if a.names, ok = scanArgs(body, &a.args, a.names[:0]); ok {
		return nil
	}
	a.args = extenderv1.ExtenderArgs{}
	return Decode(bytes.NewReader(body), "ExtenderArgs", &a.args)
}

// Set fills a as reading the encoding of args would, for a caller that has
// the arguments in memory already (tests, benchmarks). args is not copied.
func (a *Args) Set(args extenderv1.ExtenderArgs) {
	a.reset()
	a.args = args
}

// Pod is the pod the call is for; nil when the body named none. It was
// decoded by encoding/json and shares no memory with the body: it may be
// kept.
func (a *Args) Pod() *corev1.Pod { return a.args.Pod }

// Nodes are the whole candidate nodes, sent by a scheduler that is not
// node-cache capable; nil when it sent names. They may be kept.
func (a *Args) Nodes() *corev1.NodeList {
	if a.args.NodeNames != nil {
		return nil
	}
	return a.args.Nodes
}

// Names are the candidate nodes' names: NodeNames, or else the names of
// Nodes. They are borrowed until Release.
func (a *Args) Names() Names {
	switch {
	case a.args.NodeNames != nil:
		return Names{*a.args.NodeNames}
	case a.args.Nodes != nil:
		if len(a.owned) != len(a.args.Nodes.Items) {
			a.owned = a.owned[:0]
			for i := range a.args.Nodes.Items {
				a.owned = append(a.owned, a.args.Nodes.Items[i].Name)
			}
		}
		return Names{a.owned}
	}
	return Names{}
}

// Release ends the call: every name borrowed from a is invalid from now
// on. With Poison set, the body is overwritten, so that a name kept past
// the call reads as garbage rather than as the next call's node.
func (a *Args) Release() {
	if a.Poison {
		body := a.body.Bytes()
		for i := range body {
			body[i] = poisonByte
		}
	}
	a.reset()
}

// Cap is the memory the body holds for the next call.
func (a *Args) Cap() int { return a.body.Cap() }

func (a *Args) reset() {
	a.body.Reset()
	a.args = extenderv1.ExtenderArgs{}
	clear(a.names)
	a.names = a.names[:0]
	a.owned = a.owned[:0]
}
