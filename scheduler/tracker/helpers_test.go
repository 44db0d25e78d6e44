package tracker

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tessera-gpu/tessera/gpurequest"
)

func ptrTo[T any](v T) *T { return &v }

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

func gpurequestNames() gpurequest.ResourceNames { return gpurequest.DefaultResourceNames() }

type request struct {
	containers []gpurequest.ContainerRequest
	selection  gpurequest.Selection
}

func podRequests(p *corev1.Pod) (request, error) {
	c, err := gpurequest.PodRequests(p, gpurequestNames())
	if err != nil {
		return request{}, err
	}
	s, err := gpurequest.ParseAnnotations(p.Annotations)
	return request{c, s}, err
}

func equalRequests(a, b request) bool { return reflect.DeepEqual(a, b) && len(a.containers) > 0 }
