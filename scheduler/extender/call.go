package extender

import (
	"bytes"
	"errors"
	"net/http"
	"sync"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// call is the memory one filter or prioritize call works in. Calls reuse
// it, so that a call over thousands of nodes allocates almost nothing.
type call struct {
	body     bytes.Buffer
	args     extenderv1.ExtenderArgs
	names    []string
	filter   filterAnswer
	priority priorityAnswer
	out      []byte
}

// maxPooledBytes bounds the request and answer a call's memory keeps for
// the next call; an unusually large one is left to the garbage collector.
const maxPooledBytes = 4 << 20

// calls hands out calls' memory.
type calls struct{ pool sync.Pool }

func (c *calls) get() *call {
	if v, ok := c.pool.Get().(*call); ok {
		return v
	}
	return new(call)
}

func (c *calls) put(v *call) {
	if v.body.Cap() > maxPooledBytes || cap(v.out) > maxPooledBytes {
		return
	}
	v.args = extenderv1.ExtenderArgs{}
	v.filter.nodes = nil
	c.pool.Put(v)
}

// errNoPod is the answer to ExtenderArgs without a pod, such as a body of
// null: filter and prioritize have nothing to decide for.
var errNoPod = errors.New("Pod: Required value: the pod whose GPU request the nodes are filtered or scored for")

// read decodes the request's ExtenderArgs into c.args; arguments without
// a pod are an error.
func (c *call) read(w http.ResponseWriter, r *http.Request) error {
	c.body.Reset()
	if err := readBody(&c.body, http.MaxBytesReader(w, r.Body, MaxRequestBytes)); err != nil {
		return err
	}
	var err error
	if c.names, err = decodeArgs(c.body.Bytes(), &c.args, c.names[:0]); err != nil {
		return err
	}
	if c.args.Pod == nil {
		return errNoPod
	}
	return nil
}
