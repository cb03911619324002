#!/usr/bin/env bash
# Generates the throwaway Go module that builds the Kubernetes control plane and etcd at one pinned
# version: `go install k8s.io/kubernetes/cmd/...@vX` is refused because upstream's go.mod has replace
# directives (its staging modules point at ./staging/...). The wrapper copies upstream's `go` and
# `godebug` lines verbatim, requires k8s.io/kubernetes, and replaces every staging module upstream
# replaces by the published v0.<minor>.<patch> of that module. Everything is read from the upstream
# go.mod in the module cache, so a new patch release needs no hand edits.
# Usage: gen-wrapper.sh <dir>   (prints the etcd version upstream requires on stdout)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dir=${1:?usage: gen-wrapper.sh <dir>}
mkdir -p "$dir"

upstream_mod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | jq -r .GoMod)
[ -f "$upstream_mod" ] || die "no go.mod for k8s.io/kubernetes@$K8S_VERSION from the module proxy"
upstream=$(go mod edit -json "$upstream_mod")

staging_version="v0.${K8S_VERSION#v1.}"   # v1.36.3 -> v0.36.3: staging modules are tagged that way
go_line=$(jq -r .Go <<<"$upstream")
etcd_version=$(jq -r '.Require[] | select(.Path == "go.etcd.io/etcd/server/v3") | .Version' <<<"$upstream")
[ -n "$etcd_version" ] || die "k8s.io/kubernetes@$K8S_VERSION does not require go.etcd.io/etcd/server/v3"

cd "$dir"
printf 'module pfslayout.local/k8s-wrapper\n\ngo %s\n' "$go_line" > go.mod
edits=(-require="k8s.io/kubernetes@$K8S_VERSION" -require="go.etcd.io/etcd/server/v3@$etcd_version")
while IFS= read -r kv; do
  [ -n "$kv" ] && edits+=(-godebug="$kv")
done < <(jq -r '.Godebug[]? | "\(.Key)=\(.Value)"' <<<"$upstream")
while IFS= read -r path; do
  [ -n "$path" ] && edits+=(-replace="$path=$path@$staging_version")
done < <(jq -r '.Replace[]? | select(.New.Path | startswith("./")) | .Old.Path' <<<"$upstream")
go mod edit "${edits[@]}"
echo "$etcd_version"
