#!/usr/bin/env bash
# The kind variant of the test cluster, for machines with a Docker engine. NOT RUN on the CI machine
# (no Docker engine there): written against kind's documented CLI and kept deliberately small.
# Builds kind from the Go module proxy, creates the cluster from e2e/harness/kind/config.yaml, builds every
# image under images/<name>/Dockerfile as pfslayout/<name>:dev and loads it into the nodes, and
# installs the MPI Operator from its module's manifests (its image is pulled by the nodes).
# Usage: kind.sh build|up|down|status|env
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KIND_VERSION=${KIND_VERSION:-v0.33.0}
KIND_DIR=$CACHE_ROOT/kind-$KIND_VERSION
KIND=$KIND_DIR/bin/kind
CLUSTER_NAME=${PFSLAYOUT_KIND_CLUSTER:-pfslayout-e2e}
# Empty: the node image this kind release defaults to. Set it to pin another Kubernetes version.
KIND_NODE_IMAGE=${PFSLAYOUT_KIND_NODE_IMAGE:-}
KUBECONFIG_PATH=$STATE_DIR/kubeconfig
IMAGE_TAG=${PFSLAYOUT_IMAGE_TAG:-dev}

kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=30s "$@"; }

build() {
  [ -x "$KIND" ] && return 0
  log "building kind $KIND_VERSION"
  GOBIN="$KIND_DIR/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
}

running() { "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; }

up() {
  build
  mkdir -p "$STATE_DIR/helm"/{cache,config,data}
  if running && [ -f "$STATE_DIR/kind.complete" ]; then
    "$KIND" get kubeconfig --name "$CLUSTER_NAME" > "$KUBECONFIG_PATH"
    log "already running (kind cluster $CLUSTER_NAME)"
    echo already-running
    return 0
  fi
  local result=already-running
  if ! running; then
    result=started
    local image_args=()
    [ -n "$KIND_NODE_IMAGE" ] && image_args=(--image "$KIND_NODE_IMAGE")
    timeout 600 "$KIND" create cluster --name "$CLUSTER_NAME" --config "$REPO_ROOT/e2e/harness/kind/config.yaml" \
      "${image_args[@]}" --kubeconfig "$KUBECONFIG_PATH" --wait 300s >&2
  fi
  "$KIND" get kubeconfig --name "$CLUSTER_NAME" > "$KUBECONFIG_PATH"

  # The images: images/build.sh builds all of them with the Docker engine from the same Dockerfiles and
  # contexts as the buildah path (OrangeFS before MPI, every component compiled from its verified
  # source; docs/images.md), printing one "<name> docker" line each; kind loads them into the nodes.
  local images name _where
  images=$(PFSLAYOUT_IMAGE_TAG=$IMAGE_TAG timeout 7200 "$REPO_ROOT/images/build.sh" --engine docker all)
  while read -r name _where; do
    log "loading image $name"
    timeout 600 "$KIND" load docker-image --name "$CLUSTER_NAME" "$name" >&2
  done <<< "$images"

  local mpiop
  mpiop=$(go mod download -json "github.com/kubeflow/mpi-operator@$MPI_OPERATOR_VERSION" | jq -r .Dir)
  kubectl apply --server-side -k "$mpiop/manifests/overlays/standalone" >&2
  kubectl -n mpi-operator rollout status deployment/mpi-operator --timeout=300s >&2
  kubectl wait --for=condition=Ready node --all --timeout=300s >&2
  local _
  for _ in $(seq 1 120); do
    kubectl -n default get serviceaccount default >/dev/null 2>&1 && break
    sleep 1
  done
  touch "$STATE_DIR/kind.complete"
  log "kind cluster $CLUSTER_NAME up (KUBECONFIG=$KUBECONFIG_PATH)"
  echo "$result"
}

down() {
  if running; then timeout 300 "$KIND" delete cluster --name "$CLUSTER_NAME"; fi
  running && die "kind cluster $CLUSTER_NAME still exists after delete"
  rm -f "$STATE_DIR/mode" "$STATE_DIR/kind.complete"
  log "down: kind cluster $CLUSTER_NAME deleted"
}

status() {
  running || { echo "kind cluster $CLUSTER_NAME: absent"; return 3; }
  kubectl get --raw /readyz >/dev/null || return 3
  echo "kind cluster $CLUSTER_NAME: ready (KUBECONFIG=$KUBECONFIG_PATH)"
}

env_lines() {
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_PATH"
  printf 'export KUBECTL=%q\n' "$KUBECTL"
  printf 'export HELM=%q\n' "$HELM"
  printf 'export HELM_CACHE_HOME=%q HELM_CONFIG_HOME=%q HELM_DATA_HOME=%q\n' \
    "$STATE_DIR/helm/cache" "$STATE_DIR/helm/config" "$STATE_DIR/helm/data"
  # shellcheck disable=SC2016  # $PATH is expanded by whoever evaluates these lines
  printf 'export PATH=%q:"$PATH"\n' "$K8S_DIR/bin:$HELM_DIR/bin:$KIND_DIR/bin"
}

case ${1:-} in
  build) build ;;
  up) up ;;
  down) down ;;
  status) status ;;
  env) env_lines ;;
  *) die "usage: kind.sh build|up|down|status|env" ;;
esac
