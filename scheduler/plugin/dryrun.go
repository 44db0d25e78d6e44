package plugin

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// dryRunMaxAge is how long the victims of a preemption dry run are kept
// for the preemptor's next scheduling cycle, which comes within seconds
// unless the pod is gone.
const dryRunMaxAge = 10 * time.Minute

// dryRuns remembers, per preemptor and node, the GPU pods that
// kube-scheduler's preemption dry run last had taken off the node
// (RemovePod) and not given back (AddPod): when the dry run is done, that
// node's victims. kube-scheduler does not tell a plugin which node it
// chose; it nominates the pod to it, and the pod's next PreFilter reads
// the victims of that node here. The dry run decides nodes in parallel.
type dryRuns struct {
	mu   sync.Mutex
	pods map[types.UID]*dryRun
}

// dryRun is one preemptor's dry run.
type dryRun struct {
	at    time.Time
	nodes map[string][]victim
}

// victim is a pod a dry run took off a node.
type victim struct {
	uid  types.UID
	name string // namespace/name
}

// set records the victims of a node for a preemptor, dropping dry runs
// older than dryRunMaxAge.
func (d *dryRuns) set(preemptor types.UID, node string, victims []victim, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pods == nil {
		d.pods = map[types.UID]*dryRun{}
	}
	r, ok := d.pods[preemptor]
	if !ok || now.Sub(r.at) > dryRunMaxAge {
		for uid, old := range d.pods {
			if now.Sub(old.at) > dryRunMaxAge {
				delete(d.pods, uid)
			}
		}
		r = &dryRun{nodes: map[string][]victim{}}
		d.pods[preemptor] = r
	}
	r.at = now
	r.nodes[node] = slices.Clone(victims)
}

// take returns the victims last recorded on the node for the preemptor,
// and forgets the preemptor's dry run; node "" only forgets it.
func (d *dryRuns) take(preemptor types.UID, node string) []victim {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.pods[preemptor]
	if !ok {
		return nil
	}
	delete(d.pods, preemptor)
	return r.nodes[node]
}
