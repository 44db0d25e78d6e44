package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/test/framework"
)

// readDRAState reads the suite's claims, its pods and the nodes'
// ResourceSlices. Claims before pods: a claim made after the first list,
// for a pod made since, is not counted.
func readDRAState(ctx context.Context, cp *framework.ControlPlane) (*state, error) {
	claims, err := cp.Kube.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	slices, err := cp.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return &state{dra: true, pods: pods.Items, claims: claims.Items, slices: slices.Items}, nil
}

// freeDRASlots counts how many more of the suite's pods the GPUs can hold
// as kube-scheduler sees them: what the ResourceSlices offer less what
// every allocated claim consumes, its pod gone or not.
func (s *state) freeDRASlots() int64 {
	used := dra.Allocated(s.claimRefs())
	var slots int64
	for _, sl := range s.slices {
		for _, d := range sl.Spec.Devices {
			u := used[dra.DeviceKey{Pool: sl.Spec.Pool.Name, Device: d.Name}]
			memory := d.Capacity[gpuv1alpha1.DRACapacityMemory].Value
			cores := d.Capacity[gpuv1alpha1.DRACapacityCores].Value
			shares := d.Capacity[gpuv1alpha1.DRACapacityShares].Value
			slots += max(0, min((memory.Value()-u.MemoryBytes)/(podMemoryMiB<<20), (cores.Value()-u.Cores)/int64(podCores), shares.Value()-u.Shares))
		}
	}
	return slots
}

func (s *state) claimRefs() []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, len(s.claims))
	for i := range s.claims {
		out[i] = &s.claims[i]
	}
	return out
}

// orphanedClaims returns, by UID, every claim whose pod is gone.
func (s *state) orphanedClaims() map[types.UID]string {
	pods := map[types.UID]bool{}
	for _, p := range s.pods {
		pods[p.UID] = true
	}
	out := map[types.UID]string{}
	for _, c := range s.claims {
		owner := metav1.GetControllerOf(&c)
		switch {
		case owner == nil:
			out[c.UID] = fmt.Sprintf("claim %s (no owner)", c.Name)
		case !pods[owner.UID]:
			out[c.UID] = fmt.Sprintf("claim %s (pod %s, allocated %t, reserved for %d)", c.Name, owner.Name, c.Status.Allocation != nil, len(c.Status.ReservedFor))
		}
	}
	return out
}

// misclaimed names every bound pod that lacks exactly its own claim,
// allocated on its node and reserved for it, and every running pod whose
// containers do not see exactly its claim's GPUs, each with the memory
// its claim consumes of it, in the environment their CDI devices give
// them as a container runtime resolves them from the node's spec
// directory; and how many running pods' environments it read. Read it
// only while no pod is being deleted.
func (s *state) misclaimed(t *testing.T, nodes []*simNode) (violations []string, running int) {
	t.Helper()
	claims := map[string]*resourceapi.ResourceClaim{}
	for i := range s.claims {
		claims[s.claims[i].Name] = &s.claims[i]
	}
	uuids := map[dra.DeviceKey]string{}
	for _, sl := range s.slices {
		for _, d := range sl.Spec.Devices {
			if uuid := d.Attributes[gpuv1alpha1.DRAAttributeUUID].StringValue; uuid != nil {
				uuids[dra.DeviceKey{Pool: sl.Spec.Pool.Name, Device: d.Name}] = *uuid
			}
		}
	}
	views := map[string]*cdi.Cache{}
	var out []string
	for _, p := range s.live() {
		if p.Spec.NodeName == "" {
			continue
		}
		statuses := p.Status.ResourceClaimStatuses
		if len(statuses) != 1 || statuses[0].ResourceClaimName == nil {
			out = append(out, fmt.Sprintf("bound pod %s has claims %v, want its one", p.Name, statuses))
			continue
		}
		c, ok := claims[*statuses[0].ResourceClaimName]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("bound pod %s has no claim %s", p.Name, *statuses[0].ResourceClaimName))
			continue
		case !ownedBy(c, p):
			out = append(out, fmt.Sprintf("pod %s uses claim %s of %v", p.Name, c.Name, metav1.GetControllerOf(c)))
			continue
		case c.Status.Allocation == nil || !slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID }):
			out = append(out, fmt.Sprintf("claim %s of bound pod %s is not allocated and reserved for it", c.Name, p.Name))
			continue
		}
		memory := map[string]int64{} // GPU UUID → MiB the claim consumes of it
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Pool != p.Spec.NodeName {
				out = append(out, fmt.Sprintf("claim %s of pod %s on %s is allocated %s/%s", c.Name, p.Name, p.Spec.NodeName, r.Pool, r.Device))
			}
			q := r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory]
			memory[uuids[dra.DeviceKey{Pool: r.Pool, Device: r.Device}]] = q.Value() >> 20
		}
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		running++
		n := nodeNamed(nodes, p.Spec.NodeName)
		results := n.agent.Results(p.UID)
		if len(results) == 0 {
			out = append(out, fmt.Sprintf("pod %s runs, but the kubelet stand-in of %s has no record of its containers", p.Name, n.name))
		}
		if views[n.name] == nil {
			views[n.name] = framework.CDIRuntimeView(t, n.cdiDir)
		}
		for _, r := range results {
			env, err := framework.CDIEnv(views[n.name], r.CDIDevices)
			if err != nil {
				out = append(out, fmt.Sprintf("pod %s container %s got %v", p.Name, r.Container, err))
				continue
			}
			out = append(out, envMismatches(p.Name+" container "+r.Container, env, memory)...)
		}
	}
	return out, running
}

// envMismatches compares a container's environment with its claim: the
// visible GPUs must be the claim's, and each must have the memory limit
// the claim consumes of it, by its index among them.
func envMismatches(container string, env []string, memory map[string]int64) []string {
	var visible []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NVIDIA_VISIBLE_DEVICES="); ok {
			visible = strings.Split(v, ",")
		}
	}
	var want []string
	for uuid := range memory {
		want = append(want, uuid)
	}
	if !slices.Equal(sorted(visible), sorted(want)) {
		return []string{fmt.Sprintf("pod %s sees GPUs %v, its claim has %v", container, visible, want)}
	}
	var out []string
	for i, uuid := range visible {
		if limit := fmt.Sprintf("CUDA_DEVICE_MEMORY_LIMIT_%d=%dm", i, memory[uuid]); !slices.Contains(env, limit) {
			out = append(out, fmt.Sprintf("pod %s has no %s (GPU %s) in %v", container, limit, uuid, env))
		}
	}
	return out
}

func ownedBy(c *resourceapi.ResourceClaim, p *corev1.Pod) bool {
	owner := metav1.GetControllerOf(c)
	return owner != nil && owner.UID == p.UID
}

func nodeNamed(nodes []*simNode, name string) *simNode {
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}
