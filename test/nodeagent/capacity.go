package nodeagent

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/klog/v2"
)

// advertise sets the node's capacity and allocatable of a resource to the
// number of healthy devices its plugin lists, as the kubelet does.
func (a *Agent) advertise(ctx context.Context, resource string, healthy int) {
	patch := fmt.Sprintf(`{"status":{"capacity":{%[1]q:%[2]q},"allocatable":{%[1]q:%[2]q}}}`, resource, strconv.Itoa(healthy))
	_, err := a.Kube.CoreV1().Nodes().PatchStatus(ctx, a.NodeName, []byte(patch))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Advertising devices failed", "resource", resource, "healthy", healthy)
		return
	}
	klog.FromContext(ctx).V(2).Info("Advertised devices", "resource", resource, "healthy", healthy)
}
