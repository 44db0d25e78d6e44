package waiters

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
)

// gpuPod is a pod asking for one GPU with memoryMiB of its memory.
func gpuPod(name string, memoryMiB int64) *v1.Pod {
	names := gpurequest.DefaultResourceNames()
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{
			names.Count:  resource.MustParse("1"),
			names.Memory: *resource.NewQuantity(memoryMiB, resource.DecimalSI),
		}}}}},
	}
}

// request is what the pod asks for, as placement reads it.
func request(t testing.TB, pod *v1.Pod) *placement.Request {
	t.Helper()
	parser := podrequest.Parser{ResourceNames: gpurequest.DefaultResourceNames(), DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread}
	req, err := parser.Parse(pod)
	if err != nil {
		t.Fatal(err)
	}
	return req.Request
}
