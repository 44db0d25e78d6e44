package helm

import (
	"context"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	resourceclient "k8s.io/client-go/kubernetes/typed/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/test/framework"
)

// draDriver is the driver whose ResourceSlices the node daemon publishes
// in DRA mode.
const draDriver = "gpu.tessera.dev"

// TestDevicePluginWritesOnlyItsNodesResourceSlices installs the chart in
// DRA mode, whose role lets the node daemon write any ResourceSlice, and
// checks that the own-node policy holds each daemon to its node's slices
// of Tessera's driver. NodeRestriction does so for a kubelet's node
// credentials only, never for a service account.
func TestDevicePluginWritesOnlyItsNodesResourceSlices(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := newMapper(t, cp)
	release := variants()["dra"]
	objs := install(ctx, t, cp, dyn, mapper, release)
	serviceAccount := serviceAccountOf(t, objs, "DaemonSet", "-device-plugin")
	onNode := func(node string) resourceclient.ResourceSliceInterface {
		return pluginKubeClient(t, cp, release.namespace, serviceAccount, node).ResourceV1().ResourceSlices()
	}
	admin := cp.Kube.ResourceV1().ResourceSlices()
	slice := func(name, driver string, node *string) *resourcev1.ResourceSlice {
		s := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   driver,
				Pool:     resourcev1.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
				NodeName: node,
				Devices:  []resourcev1.Device{{Name: "gpu-0"}},
			},
		}
		if node == nil {
			s.Spec.AllNodes = ptr.To(true)
		}
		return s
	}

	const refused = "the device plugin on node node-a may write only ResourceSlices of driver gpu.tessera.dev on node node-a, not "
	// The API server loads a new policy, and the RBAC authorizer a new
	// binding, a moment after they are created; until the policy refuses
	// it, a write that went through is undone here.
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		// The outer context, so that the last answer is a whole one.
		_, last = onNode("node-a").Create(ctx, slice("probe", draDriver, ptr.To("node-b")), metav1.CreateOptions{})
		if last == nil {
			return false, admin.Delete(ctx, "probe", metav1.DeleteOptions{})
		}
		return strings.Contains(last.Error(), refused), nil
	})
	if err != nil {
		t.Fatalf("the own-node policy did not refuse the node daemon on node-a a ResourceSlice of node-b within a minute; last answer: %v", last)
	}

	// Slices the daemon on node-a did not write, for it to update and
	// delete: node-b's, and another driver's on node-a.
	for _, s := range []*resourcev1.ResourceSlice{
		slice("on-b", draDriver, ptr.To("node-b")),
		slice("other-driver-on-a", "other.example.com", ptr.To("node-a")),
	} {
		if _, err := admin.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(s *resourcev1.ResourceSlice) func(context.Context, resourceclient.ResourceSliceInterface) error {
		return func(ctx context.Context, slices resourceclient.ResourceSliceInterface) error {
			_, err := slices.Create(ctx, s, metav1.CreateOptions{})
			return err
		}
	}
	// update bumps the pool's generation, as the daemon does when it
	// republishes its GPUs.
	update := func(name string) func(context.Context, resourceclient.ResourceSliceInterface) error {
		return func(ctx context.Context, slices resourceclient.ResourceSliceInterface) error {
			s, err := admin.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Pool.Generation++
			_, err = slices.Update(ctx, s, metav1.UpdateOptions{})
			return err
		}
	}
	remove := func(name string) func(context.Context, resourceclient.ResourceSliceInterface) error {
		return func(ctx context.Context, slices resourceclient.ResourceSliceInterface) error {
			return slices.Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	// In order: the daemon's own slice is created, updated, then deleted.
	tests := []struct {
		name  string
		node  string
		write func(context.Context, resourceclient.ResourceSliceInterface) error
		want  string // in the refusal; none when allowed
	}{
		{"creates its node's slice", "node-a", create(slice("on-a", draDriver, ptr.To("node-a"))), ""},
		{"updates its node's slice", "node-a", update("on-a"), ""},
		{"cannot create another node's slice", "node-a", create(slice("new-on-b", draDriver, ptr.To("node-b"))), refused + "new-on-b of driver gpu.tessera.dev on node node-b"},
		{"cannot update another node's slice", "node-a", update("on-b"), refused + "on-b of driver gpu.tessera.dev on node node-b"},
		{"cannot delete another node's slice", "node-a", remove("on-b"), refused + "on-b of driver gpu.tessera.dev on node node-b"},
		{"cannot create another driver's slice on its node", "node-a", create(slice("new-other-driver-on-a", "other.example.com", ptr.To("node-a"))), refused + "new-other-driver-on-a of driver other.example.com on node node-a"},
		{"cannot update another driver's slice on its node", "node-a", update("other-driver-on-a"), refused + "other-driver-on-a of driver other.example.com on node node-a"},
		{"cannot delete another driver's slice on its node", "node-a", remove("other-driver-on-a"), refused + "other-driver-on-a of driver other.example.com on node node-a"},
		{"cannot create a slice for all nodes", "node-a", create(slice("everywhere", draDriver, nil)), refused + "everywhere of driver gpu.tessera.dev on no single node"},
		{"cannot write without a node in its credentials", "", create(slice("nowhere", draDriver, ptr.To("node-a"))), "credentials name no node"},
		{"the other node's daemon writes its node's slice", "node-b", update("on-b"), ""},
		{"deletes its node's slice", "node-a", remove("on-a"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.write(ctx, onNode(tt.node))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want the policy's refusal %q", err, tt.want)
			}
		})
	}
}
