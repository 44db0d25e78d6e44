//go:build tools

// Package kueue pins the Kueue controller manager that hack/build-kueue.sh
// builds.
package kueue

import _ "sigs.k8s.io/kueue/cmd/kueue"
