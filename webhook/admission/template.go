package admission

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podTemplate is what becomes a pod, where it lies in the object under
// review: the pod itself, or a Job's spec.template, which Kueue counts
// before any pod exists. The rules, the counts and the quota totals are
// those of a pod either way; only the paths in patches and messages
// differ.
type podTemplate struct {
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
	// at are the tokens of the template's path in the object: none for a
	// pod, spec and template for a Job.
	at []string
}

func podTemplateOf(pod *corev1.Pod) podTemplate {
	return podTemplate{meta: &pod.ObjectMeta, spec: &pod.Spec}
}

func jobTemplateOf(job *batchv1.Job) podTemplate {
	return podTemplate{meta: &job.Spec.Template.ObjectMeta, spec: &job.Spec.Template.Spec, at: []string{"spec", "template"}}
}

// pointer is the JSON pointer of tokens under the template, such as
// pointer("spec", "containers").
func (t podTemplate) pointer(tokens ...string) string {
	return pointer(append(slices.Clone(t.at), tokens...)...)
}

// path is the field path of tokens under the template, for messages.
func (t podTemplate) path(tokens ...string) *field.Path {
	all := append(slices.Clone(t.at), tokens...)
	return field.NewPath(all[0], all[1:]...)
}
