// Package certs provides the webhook's serving certificate: read from files
// and read again when they change, or self-managed, where the webhook makes
// its own certificate authority, keeps it in a Secret shared by all
// replicas, and writes the authority into the caBundle of its webhook
// configurations, so that installing Tessera needs no cert-manager.
package certs
