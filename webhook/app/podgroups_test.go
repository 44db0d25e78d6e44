package app

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// TestPodGroupDiscovery pins what discovery's answer makes of the cluster:
// PodGroups served only where scheduling.k8s.io/v1beta1 lists podgroups,
// and the answer kept for a minute.
func TestPodGroupDiscovery(t *testing.T) {
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		want      bool
	}{
		{name: "group version not served", want: false},
		{name: "group version served without podgroups", want: false, resources: []*metav1.APIResourceList{
			{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "priorityclasses"}}},
		}},
		{name: "podgroups served", want: true, resources: []*metav1.APIResourceList{
			{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "workloads"}, {Name: "podgroups"}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disc := fake.NewClientset().Discovery().(*fakediscovery.FakeDiscovery)
			disc.Resources = tc.resources
			clk := testingclock.NewFakePassiveClock(time.Now())
			d := &podGroupDiscovery{discovery: disc, clock: clk}
			if got := d.PodGroupsServed(t.Context()); got != tc.want {
				t.Fatalf("served %t, want %t", got, tc.want)
			}
			disc.Resources = nil
			if got := d.PodGroupsServed(t.Context()); got != tc.want {
				t.Errorf("within a minute: served %t, want the first answer %t", got, tc.want)
			}
			clk.SetTime(clk.Now().Add(podGroupRecheck))
			if got := d.PodGroupsServed(t.Context()); got {
				t.Errorf("a minute later, with the group gone: served %t, want false", got)
			}
		})
	}
}
