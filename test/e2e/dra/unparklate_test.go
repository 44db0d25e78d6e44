package dra

import (
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestDRAPlacesAReleasedPodBeforeItsUnpark checks, in DRA mode, that a
// parked pod a free releases is placed and runs while the API server
// still refuses to take its parked label off, and that the label comes
// off once the API server lets it.
func TestDRAPlacesAReleasedPodBeforeItsUnpark(t *testing.T) {
	const node, waits = "unparklate-1", "unparklate-waits"
	c := startTesseraScheduler(t, &simNode{name: node, gpus: twoH100On(node)})
	for name, memory := range map[string]string{"mem70": "70Gi", "mem20": "20Gi"} {
		c.claimTemplate(name, resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: memory}),
		}})
	}
	c.waitRunningCreated(claimPod("filler-0", node, "mem70", map[string]string{"cuda": ""}))
	c.waitRunningCreated(claimPod("filler-1", node, "mem70", map[string]string{"cuda": ""}))
	c.createPod(claimPod(waits, node, "mem20", map[string]string{"cuda": ""}))
	c.held().WaitPodParked(c.ctx, t, time.Minute, waits, true)

	allow := c.cp.RefuseUnparking(c.ctx, t, metav1.NamespaceDefault, waits)
	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "filler-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitRunning(waits)
	pod, err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Get(c.ctx, waits, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[gpuv1alpha1.ParkedLabel] == "" {
		t.Fatalf("%s runs with its label off: the API server did not refuse the unpark", waits)
	}
	allow()
	c.held().WaitPodParked(c.ctx, t, 90*time.Second, waits, false)
}
