package extender

import (
	"errors"
	"net/http"
	"sync"

	"github.com/tessera-gpu/tessera/scheduler/extenderargs"
)

// MaxRequestBytes bounds a request body. A filter call for 5,000 nodes by
// name is well under 1 MiB; a whole pod is at most a few hundred KiB.
const MaxRequestBytes = 10 << 20

// call is the memory one filter or prioritize call works in. Calls reuse
// it, so that a call over thousands of nodes allocates almost nothing.
type call struct {
	// args lends the call its node names until put releases it.
	args     extenderargs.Args
	filter   filterAnswer
	priority priorityAnswer
	out      []byte
}

// maxPooledBytes bounds the request and answer a call's memory keeps for
// the next call; an unusually large one is left to the garbage collector.
const maxPooledBytes = 4 << 20

// calls hands out calls' memory.
type calls struct {
	pool sync.Pool
	// poison, set by tests, overwrites each call's request body when the
	// call ends, so that a node name kept past its call reads as garbage.
	poison bool
}

func (c *calls) get() *call {
	v, ok := c.pool.Get().(*call)
	if !ok {
		v = new(call)
	}
	v.args.Poison = c.poison
	return v
}

// put ends the call: the names it borrowed from its request are invalid
// from now on.
func (c *calls) put(v *call) {
	v.args.Release()
	if v.args.Cap() > maxPooledBytes || cap(v.out) > maxPooledBytes {
		return
	}
	v.filter.nodes = nil
	c.pool.Put(v)
}

// errNoPod is the answer to ExtenderArgs without a pod, such as a body of
// null: filter and prioritize have nothing to decide for.
var errNoPod = errors.New("Pod: Required value: the pod whose GPU request the nodes are filtered or scored for")

// read decodes the request's ExtenderArgs into c.args; arguments without
// a pod are an error.
func (c *call) read(w http.ResponseWriter, r *http.Request) error {
	if err := c.args.Read(http.MaxBytesReader(w, r.Body, MaxRequestBytes)); err != nil {
		return err
	}
	if c.args.Pod() == nil {
		return errNoPod
	}
	return nil
}
