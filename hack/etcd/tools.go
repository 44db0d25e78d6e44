//go:build tools

// Package etcd pins the etcd server that hack/build-controlplane.sh builds.
package etcd

import _ "go.etcd.io/etcd/server/v3"
