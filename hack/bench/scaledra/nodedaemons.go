package scaledra

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// draDaemonSettle is the least time the DRA node daemons run before their
// steady state is measured: their ResourceSlice controllers adopt the
// slices the bench created, and sync again this long after their last
// informer event.
const draDaemonSettle = 40 * time.Second

// runDRADaemon is what a node daemon in DRA mode asks of the API server
// while its node's claims do not change, through the code it runs: the
// kubelet plugin helper's ResourceSlice controller (upstream's
// resourceslice package, as kubeletplugin.Helper.PublishResources starts
// it, the node as the owner) keeping the node's slice, which watches the
// slices of its own node and driver only, and the device plugin's Lease
// renewal (deviceplugin/nodestatus). Its GPUNode status is written when
// its prepared claims change, and it GETs each claim the kubelet asks it
// to prepare: neither happens while claims churn on other nodes, and
// neither is run here.
//
// uid is the node's, which a kubelet plugin knows from its node: without
// it the controller would GET the Node first.
func runDRADaemon(ctx context.Context, kube kubernetes.Interface, o *harness.Options, i int, uid types.UID) {
	name := harness.NodeName(i)
	devices := harness.ResourceSlice(name, harness.GPUNodeStatus(name, o.GPUsPerNode, o.Split, metav1.Now()).Devices).Spec.Devices
	resources := &resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		name: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}
	controller, err := resourceslice.StartController(ctx, resourceslice.Options{
		DriverName: gpuv1alpha1.DRADriverName,
		KubeClient: kube,
		Owner:      &resourceslice.Owner{APIVersion: "v1", Kind: "Node", Name: name, UID: uid},
		Resources:  resources,
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Starting the ResourceSlice controller", "node", name)
	} else {
		defer controller.Stop()
	}
	harness.LeaseRenewer(kube, i, o.HeartbeatPeriod).Run(ctx)
}
