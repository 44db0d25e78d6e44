package draclaims

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"golang.org/x/sync/singleflight"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
)

// FieldManager names the webhook's writes.
const FieldManager = "tessera-webhook"

// LabelManagedBy, set to FieldManager, marks the ResourceClaimTemplates the
// webhook writes; its informer watches only those.
const LabelManagedBy = "app.kubernetes.io/managed-by"

// TemplatePrefix starts the name of every ResourceClaimTemplate the
// webhook writes; a hash of the template's spec follows.
const TemplatePrefix = "tessera-gpu-"

// TemplateSelector selects the ResourceClaimTemplates the webhook writes.
func TemplateSelector() string { return LabelManagedBy + "=" + FieldManager }

// templateFor returns the ResourceClaimTemplate of a claim spec in the
// namespace, named by a hash of the spec: pods that ask for the same share
// one template, each getting its own claim from it.
func templateFor(namespace string, spec resourceapi.ResourceClaimSpec) (*resourceapi.ResourceClaimTemplate, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding a claim spec: %w", err)
	}
	sum := sha256.Sum256(data)
	t := &resourceapi.ResourceClaimTemplate{Spec: resourceapi.ResourceClaimTemplateSpec{Spec: spec}}
	t.Name = TemplatePrefix + hex.EncodeToString(sum[:])[:16]
	t.Namespace = namespace
	t.Labels = map[string]string{LabelManagedBy: FieldManager}
	return t, nil
}

// ClaimTemplates creates the ResourceClaimTemplates of pods' claims.
type ClaimTemplates interface {
	// Ensure creates want unless its namespace already has it. The name
	// is a hash of the spec, so a template of that name with another spec
	// was written by someone else: Ensure fails rather than let the pod
	// be given claims it did not ask for.
	Ensure(ctx context.Context, want *resourceapi.ResourceClaimTemplate) error
}

// NewClaimTemplates returns the ClaimTemplates of a cluster: read from the
// lister, of an informer on TemplateSelector, and created through kube.
func NewClaimTemplates(kube kubernetes.Interface, lister resourcelisters.ResourceClaimTemplateLister) ClaimTemplates {
	return &apiTemplates{kube: kube, lister: lister}
}

// apiTemplates answers most admissions from memory: pods of a shape the
// namespace has seen cost no API call, so a burst of pods does not queue
// behind the client's rate limit and the API server's webhook timeout.
type apiTemplates struct {
	kube   kubernetes.Interface
	lister resourcelisters.ResourceClaimTemplateLister
	// creates makes concurrent admissions of one new shape share one
	// create.
	creates singleflight.Group
}

var _ ClaimTemplates = (*apiTemplates)(nil)

func (t *apiTemplates) Ensure(ctx context.Context, want *resourceapi.ResourceClaimTemplate) error {
	got, err := t.get(ctx, want)
	if err != nil {
		return fmt.Errorf("creating ResourceClaimTemplate %s/%s: %w", want.Namespace, want.Name, err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		return fmt.Errorf("ResourceClaimTemplate %s/%s exists with another spec than the webhook writes for this request; delete it, and the next pod of this shape recreates it", want.Namespace, want.Name)
	}
	return nil
}

// get returns the template of want's namespace and name, creating it from
// want when the namespace lacks it.
func (t *apiTemplates) get(ctx context.Context, want *resourceapi.ResourceClaimTemplate) (*resourceapi.ResourceClaimTemplate, error) {
	got, err := t.lister.ResourceClaimTemplates(want.Namespace).Get(want.Name)
	if !apierrors.IsNotFound(err) {
		return got, err
	}
	v, err, _ := t.creates.Do(want.Namespace+"/"+want.Name, func() (any, error) { return t.create(ctx, want) })
	if err != nil {
		return nil, err
	}
	return v.(*resourceapi.ResourceClaimTemplate), nil
}

// create creates the template, or reads it from the API server when it
// exists already: made by another replica, by this one before its informer
// saw it, or without the webhook's label.
func (t *apiTemplates) create(ctx context.Context, want *resourceapi.ResourceClaimTemplate) (*resourceapi.ResourceClaimTemplate, error) {
	templates := t.kube.ResourceV1().ResourceClaimTemplates(want.Namespace)
	got, err := templates.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		got, err = templates.Get(ctx, want.Name, metav1.GetOptions{})
	}
	return got, err
}
