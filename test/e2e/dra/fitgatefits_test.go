package dra

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestDRAFitGateNeverHoldsWhatFits takes random steps under
// tessera-scheduler's DRA profile (pods whose claims ask for random
// amounts of GPU memory, or a whole GPU, created; placed pods deleted)
// and after each creation checks that the fit gate did not hold the pod
// while some GPU had room for its claim: a pod stays held only while no
// device, by the slices and the capacity the allocated claims consume,
// has a share and the memory free. A gate that holds every pod fails at
// step 0.
func TestDRAFitGateNeverHoldsWhatFits(t *testing.T) {
	const steps = 24
	c := startTesseraScheduler(t, &simNode{name: "nh-a", gpus: twoH100On("nh-a")}, &simNode{name: "nh-b", gpus: `
gpus:
- {uuid: GPU-nh-b-0, index: 0, model: NVIDIA L4, memoryMiB: 24576, numaNode: 0}
- {uuid: GPU-nh-b-1, index: 1, model: NVIDIA L4, memoryMiB: 24576, numaNode: 0}
`})
	sizes := []string{"5Gi", "12Gi", "40Gi", "75Gi", ""}
	for _, size := range sizes {
		var capacity map[resourceapi.QualifiedName]string
		if size != "" {
			capacity = map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: size}
		}
		c.claimTemplate(sizeTemplate(size), resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{gpuRequest("gpu", 1, capacity)}})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var placed []string
	held := 0
	for step := range steps {
		if len(placed) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(placed))
			c.deleteAndWaitFreed(placed[i])
			placed = append(placed[:i], placed[i+1:]...)
		}
		name := fmt.Sprintf("step-%02d", step)
		size := sizes[rng.IntN(len(sizes))]
		pod := claimPod(name, "", sizeTemplate(size), map[string]string{"cuda": ""})
		pod.Spec.NodeSelector = nil
		c.createPod(pod)
		switch c.waitPlacedOrRightlyHeld(step, name, size) {
		case "placed":
			placed = append(placed, name)
		case "held":
			held++
		}
	}
	t.Logf("%d of %d pods were held when created, each while no GPU had room for its claim", held, steps)
	if held == 0 {
		t.Error("no pod was held: the steps never filled the GPUs")
	}
}

// sizeTemplate names the claim template of a size ("" for a whole GPU).
func sizeTemplate(size string) string {
	if size == "" {
		return "whole"
	}
	return "mem" + strings.ToLower(size)
}

// waitPlacedOrRightlyHeld waits until the pod is placed, or waits while no
// GPU has room for its claim of size; it fails the test when the pod
// stays unplaced while a GPU has room. It returns "placed", "held" (by the
// fit gate) or "unschedulable" (turned away by kube-scheduler).
func (c *cluster) waitPlacedOrRightlyHeld(step int, name, size string) string {
	c.t.Helper()
	outcome := ""
	framework.WaitFor(c.t, 2*time.Minute, fmt.Sprintf("step %d: %s placed, or waiting while no GPU has room for it", step, name), func() (bool, string) {
		pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if pod.Spec.NodeName != "" {
			outcome = "placed"
			return true, ""
		}
		why := framework.HeldWhy(pod)
		turnedAway := false
		for _, cond := range pod.Status.Conditions {
			turnedAway = turnedAway || cond.Type == "PodScheduled" && cond.Reason == "Unschedulable"
		}
		if !turnedAway {
			return false, "neither placed nor waiting"
		}
		if room, where := c.roomFor(size); room {
			return false, fmt.Sprintf("waits (%q) while %s", why, where)
		}
		outcome = "unschedulable"
		if why != "" {
			outcome = "held"
		}
		return true, ""
	})
	return outcome
}

// deleteAndWaitFreed deletes the pod at once and waits until its claims
// are deallocated.
func (c *cluster) deleteAndWaitFreed(name string) {
	c.t.Helper()
	pods := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault)
	if err := pods.Delete(c.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		c.t.Fatal(err)
	}
	framework.WaitFor(c.t, time.Minute, name+" gone and its claims freed", func() (bool, string) {
		if _, err := pods.Get(c.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, "pod still there"
		}
		claims, err := c.cp.Kube.ResourceV1().ResourceClaims(metav1.NamespaceDefault).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, claim := range claims.Items {
			for _, owner := range claim.OwnerReferences {
				if owner.Name == name && claim.Status.Allocation != nil {
					return false, "claim " + claim.Name + " still allocated"
				}
			}
		}
		return true, ""
	})
}
