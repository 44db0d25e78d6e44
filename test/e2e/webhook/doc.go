// Package webhook tests Tessera's admission webhook end to end: the real
// kube-apiserver calls it over TLS through the webhook configurations that
// ship in deploy/webhook, pointed at the webhook running in process.
package webhook
