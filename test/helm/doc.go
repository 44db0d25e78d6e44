// Package helm tests the Helm chart in deploy/helm/tessera: it lints and
// renders the chart with the Helm version pinned in hack/helm, checks what
// the values schema and the templates refuse, checks the RBAC it grants,
// and applies what it renders to a real kube-apiserver.
package helm
