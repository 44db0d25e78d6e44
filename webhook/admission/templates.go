package admission

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// FieldManager names the webhook's writes.
const FieldManager = "tessera-webhook"

// ClaimTemplates reads and creates ResourceClaimTemplates, in production
// through the API server.
type ClaimTemplates interface {
	Get(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaimTemplate, error)
	Create(ctx context.Context, template *resourceapi.ResourceClaimTemplate) (*resourceapi.ResourceClaimTemplate, error)
}

// NewClaimTemplates returns the ClaimTemplates of a cluster.
func NewClaimTemplates(kube kubernetes.Interface) ClaimTemplates {
	return apiTemplates{kube: kube}
}

type apiTemplates struct{ kube kubernetes.Interface }

var _ ClaimTemplates = apiTemplates{}

func (t apiTemplates) Get(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaimTemplate, error) {
	return t.kube.ResourceV1().ResourceClaimTemplates(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (t apiTemplates) Create(ctx context.Context, template *resourceapi.ResourceClaimTemplate) (*resourceapi.ResourceClaimTemplate, error) {
	return t.kube.ResourceV1().ResourceClaimTemplates(template.Namespace).Create(ctx, template, metav1.CreateOptions{FieldManager: FieldManager})
}

// ensureTemplate creates the template unless its namespace already has it.
// The name is a hash of the spec, so a template of that name with another
// spec was written by someone else: the pod is refused rather than given
// claims it did not ask for.
func (a *Admitter) ensureTemplate(ctx context.Context, want *resourceapi.ResourceClaimTemplate) error {
	got, err := a.templates.Get(ctx, want.Namespace, want.Name)
	if apierrors.IsNotFound(err) {
		got, err = a.templates.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			// Another replica, or a pod of the same shape, came first.
			got, err = a.templates.Get(ctx, want.Namespace, want.Name)
		}
	}
	if err != nil {
		return fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", want.Namespace, want.Name, err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		return fmt.Errorf("ResourceClaimTemplate %s/%s exists with another spec than the webhook writes for this request; delete it, and the next pod of this shape recreates it", want.Namespace, want.Name)
	}
	return nil
}
