// Package version is the build's identity, stamped by the build scripts
// with -ldflags -X (hack/version.sh): the --version flag and the
// tessera_build_info metric of every Tessera binary read it.
package version
