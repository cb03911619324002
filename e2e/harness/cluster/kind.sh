#!/usr/bin/env bash
# The kind variant of the test cluster (docs/kind.md): one control plane and three workers, each a
# container of the machine's engine — Docker where `docker info` works, else podman (kind's podman
# provider). With Docker and a reachable registry the node image is kind's public one of this kind release
# (PFSLAYOUT_KIND_NODE_IMAGE pins another); with podman, or PFSLAYOUT_KIND_NODE_IMAGE=local, it is built
# here from Debian packages and this project's own builds (e2e/harness/kind/node-image.sh, cached).
# Not yet here (issue 32): the project's images from the registry, the MPI Operator, the e2e suite on it.
# Usage: kind.sh build|up|down|status|env
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KIND_DIR=$CACHE_ROOT/kind-$KIND_VERSION
KIND=$KIND_DIR/bin/kind
CLUSTER_NAME=${PFSLAYOUT_KIND_CLUSTER:-pfslayout-e2e}
KUBECONFIG_PATH=$STATE_DIR/kubeconfig
CONFIG=$STATE_DIR/kind-config.yaml
NODE_IMAGE=${PFSLAYOUT_KIND_NODE_IMAGE:-}

kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=30s "$@"; }

# The engine: Docker when its daemon answers, else podman. podman gets a containers.conf of our own
# (CONTAINERS_CONF: the machine's stays as it is) with the two settings kind needs on this kind of
# machine (docs/kind.md): rlimits low enough for runc in nested containers, and netavark networks, whose
# DNS (aardvark-dns) lets nodes find the control plane by name (podman's CNI networks here have none).
engine() {
  if command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; then echo docker
  elif command -v podman >/dev/null; then echo podman
  else die "kind needs a container engine: neither \`docker info\` nor podman works here (Debian: apt-get install podman netavark aardvark-dns)"; fi
}
ENGINE=$(engine)
if [ "$ENGINE" = podman ]; then
  export KIND_EXPERIMENTAL_PROVIDER=podman CONTAINERS_CONF=$STATE_DIR/containers.conf
  for p in netavark aardvark-dns; do
    [ -x "/usr/lib/podman/$p" ] || command -v "$p" >/dev/null \
      || die "podman's $p is not installed: kind's nodes find each other by name through it (apt-get install $p)"
  done
  [ -n "$NODE_IMAGE" ] || NODE_IMAGE=local
fi

build() {
  [ -x "$KIND" ] && return 0
  log "building kind $KIND_VERSION"
  GOBIN="$KIND_DIR/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
}

running() { "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; }

podman_conf() {
  mkdir -p "$STATE_DIR"
  cat > "$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[network]
network_backend = "netavark"
CONF
}

# The node image to create the cluster from: kind's default (empty), a pinned one, or the local build
# (loaded into the engine when it is not there yet); its kubeadm patches go into the cluster's config.
node_image() {
  cp "$REPO_ROOT/e2e/harness/kind/config.yaml" "$CONFIG"
  [ "$NODE_IMAGE" = local ] || { echo "$NODE_IMAGE"; return 0; }
  local archive name
  read -r archive name < <("$REPO_ROOT/e2e/harness/kind/node-image.sh")
  if ! "$ENGINE" image inspect "$name" >/dev/null 2>&1; then
    log "loading $name into $ENGINE"
    "$ENGINE" load -i "$archive" >&2
  fi
  # our etcd and CoreDNS are tagged with their true versions, not the ones kubeadm would ask for
  { echo "- |"; sed -n '/^kind: ClusterConfiguration/,$p' "$KIND_CP_DIR/kubeadm-images.yaml" \
      | grep -v '^kubernetesVersion:' | sed 's/^/  /'; } > "$STATE_DIR/kubeadm-patch.yaml"
  awk -v patch="$STATE_DIR/kubeadm-patch.yaml" '{print} /^kubeadmConfigPatches:/{while((getline l < patch) > 0) print l}' \
    "$REPO_ROOT/e2e/harness/kind/config.yaml" > "$CONFIG"
  echo "$name"
}

up() {
  build
  mkdir -p "$STATE_DIR/helm"/{cache,config,data}
  [ "$ENGINE" = podman ] && podman_conf
  if running && [ -f "$STATE_DIR/kind.complete" ]; then
    "$KIND" get kubeconfig --name "$CLUSTER_NAME" > "$KUBECONFIG_PATH"
    log "already running (kind cluster $CLUSTER_NAME)"
    echo already-running
    return 0
  fi
  # kind mounts the host's /lib/modules read-only into every node; a machine without kernel modules
  # (this one) needs the empty directory
  if [ ! -d /lib/modules ]; then
    [ "$(id -u)" -eq 0 ] || die "/lib/modules does not exist and kind mounts it into every node: create it (sudo mkdir /lib/modules)"
    mkdir -p /lib/modules
  fi
  local result=already-running image
  image=$(node_image)
  if ! running; then
    result=started
    local image_args=()
    [ -n "$image" ] && image_args=(--image "$image")
    log "creating kind cluster $CLUSTER_NAME ($ENGINE${image:+, $image})"
    # 8>&-: podman's conmon and aardvark-dns outlive this call; holding cluster.sh's lock they would
    # block every later up/down of this state directory
    timeout 900 "$KIND" create cluster --name "$CLUSTER_NAME" --config "$CONFIG" \
      "${image_args[@]}" --kubeconfig "$KUBECONFIG_PATH" --wait 300s >&2 8>&-
  fi
  "$KIND" get kubeconfig --name "$CLUSTER_NAME" > "$KUBECONFIG_PATH"
  kubectl wait --for=condition=Ready node --all --timeout=300s >&2
  kubectl -n kube-system rollout status deployment/coredns --timeout=300s >&2
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
  [ "$ENGINE" = podman ] && [ ! -f "$CONTAINERS_CONF" ] && podman_conf
  if running; then timeout 300 "$KIND" delete cluster --name "$CLUSTER_NAME" >&2; fi
  running && die "kind cluster $CLUSTER_NAME still exists after delete"
  # kind leaves its network (and the engine keeps the loaded node image); the node image stays cached as
  # an archive (node-image.sh), so a later `up` loads it again in seconds
  if "$ENGINE" network inspect kind >/dev/null 2>&1 \
     && [ -z "$("$ENGINE" ps -aq --filter network=kind 2>/dev/null)" ]; then
    "$ENGINE" network rm kind >/dev/null
  fi
  if [ "$ENGINE" = podman ]; then
    podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/pfslayout/kind-node:' \
      | xargs -r podman rmi >/dev/null 2>&1 || true
  fi
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
  [ "$ENGINE" = podman ] && printf 'export KIND_EXPERIMENTAL_PROVIDER=podman CONTAINERS_CONF=%q\n' "$CONTAINERS_CONF"
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
