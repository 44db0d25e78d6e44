#!/usr/bin/env bash
# update-codegen.sh regenerates everything derived from apis/: deepcopy and
# registration code next to the types, the clientset, listers, informers,
# apply configurations and OpenAPI definitions under generated/, and the CRD
# manifests under deploy/crds/ and the Helm chart. Every generator is the version pinned in go.mod.
#
# TESSERA_CODEGEN_ROOT regenerates into another copy of the tree (used by
# verify-codegen.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_root=${TESSERA_CODEGEN_ROOT:-$root}
module=github.com/tessera-gpu/tessera
boilerplate="$root/hack/boilerplate.go.txt"

cd "$out_root"
codegen_pkg=$(go list -f '{{.Dir}}' k8s.io/code-generator)
# shellcheck source=/dev/null
source "$codegen_pkg/kube_codegen.sh"

kube::codegen::gen_helpers --boilerplate "$boilerplate" "$out_root/apis"
kube::codegen::gen_register --boilerplate "$boilerplate" "$out_root/apis"

kube::codegen::gen_openapi \
	--output-dir "$out_root/generated/openapi" \
	--output-pkg "$module/generated/openapi" \
	--report-filename "$root/hack/api-rules-violations.list" \
	--boilerplate "$boilerplate" \
	"$out_root/apis"
# The apply configurations carry the types' structured-merge schema, read
# from the OpenAPI definitions just generated: without it the fake clientset
# cannot create or apply Tessera's types, and no Extract helpers are made.
schema=$(mktemp)
trap 'rm -f "$schema"' EXIT
go run ./hack/models-schema >"$schema"
kube::codegen::gen_client \
	--with-watch \
	--with-applyconfig \
	--applyconfig-openapi-schema "$schema" \
	--output-dir "$out_root/generated" \
	--output-pkg "$module/generated" \
	--boilerplate "$boilerplate" \
	"$out_root/apis"

go tool controller-gen crd paths=./apis/... output:crd:dir=./deploy/crds
# The Helm chart installs the same CRDs; its copies must never drift.
cp deploy/crds/*.yaml deploy/helm/tessera/files/crds/
