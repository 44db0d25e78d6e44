package dra

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestSlicesFollowInventoryHealthAndCordonsAndSurviveRestarts checks what
// the node publishes: its GPUs with their attributes and capacities; a GPU
// withdrawn while unhealthy or cordoned and offered again after; and a
// restarted daemon that leaves the slice and the prepared claims as they
// were.
func TestSlicesFollowInventoryHealthAndCordonsAndSurviveRestarts(t *testing.T) {
	c := startCluster(t, &simNode{name: "duo", gpus: twoH100})
	both := func(d []resourceapi.Device) bool { return slices.Equal(deviceNames(d), []string{"gpu-0", "gpu-1"}) }
	onlySecond := func(d []resourceapi.Device) bool { return slices.Equal(deviceNames(d), []string{"gpu-1"}) }

	slice := c.waitSlice("duo", "both GPUs", both)
	d := slice.Spec.Devices[1]
	if *d.Attributes[gpuv1alpha1.DRAAttributeUUID].StringValue != "GPU-duo-1" || *d.Attributes[gpuv1alpha1.DRAAttributeNUMANode].IntValue != 1 ||
		*d.Attributes[gpuv1alpha1.DRAAttributeModel].StringValue != "NVIDIA H100 80GB HBM3" {
		t.Errorf("gpu-1 attributes %v", d.Attributes)
	}
	if q := d.Capacity[gpuv1alpha1.DRACapacityMemory].Value; q.Value() != 80<<30 {
		t.Errorf("gpu-1 memory %s, want 80Gi", &q)
	}
	if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		t.Error("gpu-1 is not shareable")
	}

	// GPU 0 turns unhealthy, then recovers.
	unhealthy := strings.Replace(twoH100, "numaNode: 0}", "numaNode: 0, health: Unhealthy, healthMessage: XID 79}", 1)
	writeGPUs(t, c.nodes["duo"], unhealthy)
	c.waitSlice("duo", "only the healthy GPU", onlySecond)
	writeGPUs(t, c.nodes["duo"], twoH100)
	c.waitSlice("duo", "both GPUs after recovery", both)

	// The administrator cordons GPU 0, then lifts the cordon.
	c.setCordoned(t, "duo", []string{"GPU-duo-0"})
	c.waitSlice("duo", "only the uncordoned GPU", onlySecond)
	c.setCordoned(t, "duo", nil)
	slice = c.waitSlice("duo", "both GPUs after the cordon is lifted", both)

	// A pod is prepared; then the daemon restarts.
	c.claimTemplate("one", resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "12Gi"}),
	}})
	pod := c.waitRunningCreated(claimPod("p", "duo", "one", map[string]string{"cuda": ""}))
	specs := c.specFiles("duo")
	if len(specs) != 1 {
		t.Fatalf("spec files %v, want one", specs)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(specs[0], old, old); err != nil {
		t.Fatal(err)
	}
	got := c.restartAndPrepareAgain("duo", pod)
	if got == nil || got.Error != "" || len(got.Devices) != 1 ||
		!slices.Equal(got.Devices[0].CdiDeviceIds, c.agents["duo"].Results(pod.UID)[0].CDIDevices) {
		t.Errorf("after the restart Prepare answered %v, before %v", got, c.agents["duo"].Results(pod.UID))
	}
	if fi, err := os.Stat(specs[0]); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the restarted daemon prepared the claim again: %v, %v", fi, err)
	}
	// Give the restarted daemon's publisher time to write anything it would.
	time.Sleep(2 * time.Second)
	after := c.waitSlice("duo", "both GPUs after the restart", both)
	if after.UID != slice.UID || after.ResourceVersion != slice.ResourceVersion {
		t.Errorf("the restart rewrote the slice: %s/%s, before %s/%s", after.UID, after.ResourceVersion, slice.UID, slice.ResourceVersion)
	}
}

func writeGPUs(t *testing.T, n *simNode, content string) {
	t.Helper()
	tmp := n.gpuFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.gpuFile); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) setCordoned(t *testing.T, node string, uuids []string) {
	t.Helper()
	framework.WaitFor(t, time.Minute, "the GPUNode to take the cordon", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(c.ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		gn.Spec.CordonedDevices = uuids
		if _, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Update(c.ctx, gn, metav1.UpdateOptions{}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// restartAndPrepareAgain restarts the node's daemon and asks it, as a
// restarted kubelet does, to prepare the pod's claim again, returning its
// answer.
func (c *cluster) restartAndPrepareAgain(node string, pod *corev1.Pod) *drapb.NodePrepareResourceResponse {
	c.t.Helper()
	n := c.nodes[node]
	n.stop()
	c.startDaemon(n)
	claim, err := c.cp.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(c.ctx, *pod.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var resp *drapb.NodePrepareResourcesResponse
	framework.WaitFor(c.t, time.Minute, "the restarted daemon to prepare the claim", func() (bool, string) {
		conn, err := grpc.NewClient("unix://"+filepath.Join(n.dir, "plugin", "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		resp, err = drapb.NewDRAPluginClient(conn).NodePrepareResources(c.ctx, &drapb.NodePrepareResourcesRequest{
			Claims: []*drapb.Claim{{Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)}},
		})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return resp.Claims[string(claim.UID)]
}
