#!/usr/bin/env bash
# The kind variant of the test cluster (docs/kind.md): one control plane and three workers, each a
# container of the machine's engine — Docker where `docker info` works, else podman (kind's podman
# provider). With Docker and a reachable registry the node image is kind's public one of this kind release
# (PFSLAYOUT_KIND_NODE_IMAGE pins another); with podman, or PFSLAYOUT_KIND_NODE_IMAGE=local, it is built
# here from Debian packages and this project's own builds (e2e/harness/kind/node-image.sh, cached).
# Beside the nodes, as host processes recorded by PID like the local cluster's (procs.sh): the image registry
# (registry.sh), bound to the gateway of kind's network so every node's containerd pulls the project's
# images from it; the MPI Operator's controller; and kwok with fake nodes tainted
# pfslayout.io/fake-node=true:NoSchedule, so only a pod that tolerates the taint lands on one.
# Usage: kind.sh build|up|down|status|env|images
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KIND_DIR=$CACHE_ROOT/kind-$KIND_VERSION
KIND=$KIND_DIR/bin/kind
CLUSTER_NAME=${PFSLAYOUT_KIND_CLUSTER:-pfslayout-e2e}
KUBECONFIG_PATH=$STATE_DIR/kubeconfig
CONFIG=$STATE_DIR/kind-config.yaml
NODE_IMAGE=${PFSLAYOUT_KIND_NODE_IMAGE:-}

PIDS=$STATE_DIR/pids
LOGS=$STATE_DIR/logs
UP_TIMEOUT=${PFSLAYOUT_E2E_UP_TIMEOUT:-120}
# Host processes beside the nodes, in start order; `down` stops them before the nodes.
HOST_COMPONENTS=(registry kwok mpi-operator)
KWOK_NODE_COUNT=${PFSLAYOUT_E2E_NODES:-4}

kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=30s "$@"; }
# shellcheck source=procs.sh
. "$CLUSTER_LIB_DIR/procs.sh"
# shellcheck source=registry.sh
. "$CLUSTER_LIB_DIR/registry.sh"

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
  if [ ! -x "$KIND" ]; then
    log "building kind $KIND_VERSION"
    GOBIN="$KIND_DIR/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
  fi
  # the node image too, when it is built here (cached: a no-op when its key is unchanged)
  if [ "$NODE_IMAGE" = local ]; then "$REPO_ROOT/e2e/harness/kind/node-image.sh" >/dev/null; fi
}

# The host as kind's nodes see it: the IPv4 gateway of kind's network (podman: subnets[].gateway;
# Docker: IPAM.Config[].Gateway, beside an IPv6 one).
kind_gateway() {
  "$ENGINE" network inspect kind | jq -r '.[0] | [(.subnets // [])[].gateway, (.IPAM.Config // [])[].Gateway]
    | map(select(. != null and test("^[0-9.]+$"))) | first // empty'
}

# The host processes beside the nodes (the header): registry, kwok, MPI Operator.
host_up() {
  local gw node
  gw=$(kind_gateway)
  [ -n "$gw" ] || die "kind's $ENGINE network has no IPv4 gateway (\`$ENGINE network inspect kind\`)"
  REGISTRY_ADDR=$gw:$PORT_REGISTRY
  (exec 3<>"/dev/tcp/$gw/$PORT_REGISTRY") 2>/dev/null \
    && die "$REGISTRY_ADDR is in use (another cluster?): set PFSLAYOUT_E2E_PORT_BASE to a free range"
  echo "$REGISTRY_ADDR" > "$STATE_DIR/registry.addr"
  registry_up
  # Every node's containerd resolves docker.io (the project images' default registry) and the registry's
  # own address through it (config_path: config.yaml's containerdConfigPatches); read at each pull.
  rm -rf "$STATE_DIR/certs.d"
  registry_hosts "$STATE_DIR/certs.d"
  for node in $("$KIND" get nodes --name "$CLUSTER_NAME"); do
    "$ENGINE" exec "$node" rm -rf /etc/containerd/certs.d
    "$ENGINE" cp "$STATE_DIR/certs.d" "$node:/etc/containerd/certs.d"
  done
  push_images

  kubectl apply --server-side -f "$MPIOP_DIR/crd/kubeflow.org_mpijobs.yaml" >/dev/null
  wait_for "the MPIJob CRD to be established" "" \
    kubectl wait --for=condition=Established --timeout=5s crd/mpijobs.kubeflow.org
  start mpi-operator "$MPIOP_DIR/bin/mpi-operator" --kubeConfig="$KUBECONFIG_PATH" \
    --health-addr="127.0.0.1:$PORT_MPIOP" --kube-api-qps=50 --kube-api-burst=100
  # kwok: fake nodes for the tests that need many, tainted so that nothing else lands on them; fake pod
  # addresses outside flannel's 10.244.0.0/16; node and pod Stages only (kind's provisioner owns volumes).
  if [ "$KWOK_NODE_COUNT" -gt 0 ]; then
    "$CLUSTER_LIB_DIR/kwok/nodes.sh" "$KWOK_NODE_COUNT" tainted | kubectl apply -f - >/dev/null
    sed 's#^\(  cidr:\).*#\1 10.250.0.1/16#' "$CLUSTER_LIB_DIR/kwok/kwok.yaml" > "$STATE_DIR/kwok.yaml"
    local stages=() s
    for s in "$KWOK_DIR"/stages/node-*.yaml "$KWOK_DIR"/stages/pod-*.yaml; do stages+=(--config="$s"); done
    start kwok "$KWOK_DIR/bin/kwok" --kubeconfig="$KUBECONFIG_PATH" \
      --config="$STATE_DIR/kwok.yaml" "${stages[@]}" --config="$CLUSTER_LIB_DIR/kwok/stages.yaml" \
      --server-address="127.0.0.1:$PORT_KWOK"
    wait_for "$KWOK_NODE_COUNT Ready kwok nodes" kwok kwok_nodes_ready
  fi
  wait_for "the MPI Operator's /healthz" mpi-operator curl -fsS "http://127.0.0.1:$PORT_MPIOP/healthz"
}

# The project's images (built when changed), pushed to the registry as on the local cluster; the references
# are recorded for the tests (real.pushed_images). The nodes pull a pushed tag again once its digest changed.
push_images() {
  local pushed=$STATE_DIR/node/images.pushed node name digest
  mkdir -p "$STATE_DIR/node"
  PFSLAYOUT_REGISTRY_INSECURE=1 "$REPO_ROOT/images/build.sh" --push "$REGISTRY_ADDR" operator orangefs mpi \
    > "$pushed" || die "images/build.sh --push $REGISTRY_ADDR failed (see above)"
  # The tags stay `dev` and pods pull IfNotPresent: a node holding a tag at another digest than the one
  # pushed (an older build) drops it, so its next pod pulls the new one (node.sh does the same).
  for node in $("$KIND" get nodes --name "$CLUSTER_NAME"); do
    while read -r name digest; do
      log "dropping $name from $node: not the pushed $digest"
      "$ENGINE" exec "$node" ctr -n k8s.io images rm "$name" >/dev/null
    done < <(registry_stale_tags "$("$ENGINE" exec "$node" ctr -n k8s.io images ls -q)" "$pushed")
  done
}

kwok_nodes_ready() {
  local n
  n=$(kubectl get nodes -l type=kwok \
        -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')
  [ "$n" -ge "$KWOK_NODE_COUNT" ]
}

host_running() {
  local c
  for c in "${HOST_COMPONENTS[@]}"; do
    [ "$c" = kwok ] && [ "$KWOK_NODE_COUNT" -eq 0 ] && continue
    pid_of "$c" >/dev/null || return 1
  done
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
  if running && [ -f "$STATE_DIR/kind.complete" ] && host_running; then
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
  # the host processes of a half-started cluster (a crash, a reboot) are started again from scratch
  stop_group "${HOST_COMPONENTS[@]}"
  printf 'PORT_BASE=%s\nK8S_VERSION=%s\nKIND_VERSION=%s\n' "$PORT_BASE" "$K8S_VERSION" "$KIND_VERSION" \
    > "$STATE_DIR/cluster.env"
  host_up
  touch "$STATE_DIR/kind.complete"
  log "kind cluster $CLUSTER_NAME up (KUBECONFIG=$KUBECONFIG_PATH, registry $REGISTRY_ADDR)"
  echo "$result"
}

down() {
  [ "$ENGINE" = podman ] && [ ! -f "$CONTAINERS_CONF" ] && podman_conf
  stop_group "${HOST_COMPONENTS[@]}"
  local c
  for c in "${HOST_COMPONENTS[@]}"; do pid_of "$c" >/dev/null && die "$c still runs after down (pid $(pid_of "$c"))"; done
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
  rm -f "$STATE_DIR/mode" "$STATE_DIR/kind.complete" "$STATE_DIR/registry.addr"
  log "down: kind cluster $CLUSTER_NAME deleted"
}

# What `down` must not leave, one line each (nothing when clean): the cluster's node containers, kind's
# network with none of anyone's containers left on it, the node image loaded into the engine, a host
# process. The node image's archive in the cache is kept on purpose (node-image.sh).
leftovers() {
  local c
  "$ENGINE" ps -a --format '{{.Names}}' | grep "^$CLUSTER_NAME-" | sed 's/^/container: /' || true
  if "$ENGINE" network inspect kind >/dev/null 2>&1 && [ -z "$("$ENGINE" ps -aq --filter network=kind 2>/dev/null)" ]; then
    echo "network: kind"
  fi
  if [ "$ENGINE" = podman ]; then
    podman images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/pfslayout/kind-node:' | sed 's/^/image: /' || true
  fi
  for c in "${HOST_COMPONENTS[@]}"; do
    if pid_of "$c" >/dev/null; then echo "process: $c (pid $(pid_of "$c"))"; fi
  done
}

status() {
  running || { echo "kind cluster $CLUSTER_NAME: absent"; return 3; }
  kubectl get --raw /readyz >/dev/null || return 3
  host_running || { echo "kind cluster $CLUSTER_NAME: a host process (${HOST_COMPONENTS[*]}) is not running"; return 3; }
  echo "kind cluster $CLUSTER_NAME: ready (KUBECONFIG=$KUBECONFIG_PATH)"
}

env_lines() {
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_PATH"
  printf 'export KUBECTL=%q\n' "$KUBECTL"
  printf 'export HELM=%q\n' "$HELM"
  printf 'export HELM_CACHE_HOME=%q HELM_CONFIG_HOME=%q HELM_DATA_HOME=%q\n' \
    "$STATE_DIR/helm/cache" "$STATE_DIR/helm/config" "$STATE_DIR/helm/data"
  # where images/build.sh --push puts images the nodes pull (registry.sh)
  [ -f "$STATE_DIR/registry.addr" ] && printf 'export PFSLAYOUT_REGISTRY=%q PFSLAYOUT_REGISTRY_INSECURE=1\n' "$REGISTRY_ADDR"
  [ "$ENGINE" = podman ] && printf 'export KIND_EXPERIMENTAL_PROVIDER=podman CONTAINERS_CONF=%q\n' "$CONTAINERS_CONF"
  # shellcheck disable=SC2016  # $PATH is expanded by whoever evaluates these lines
  printf 'export PATH=%q:"$PATH"\n' "$K8S_DIR/bin:$HELM_DIR/bin:$KIND_DIR/bin"
}

if [ "${1:-}" != up ]; then
  use_state_ports
  # The registry listens on kind network's gateway (the nodes reach the host there), recorded by `up`.
  if [ -f "$STATE_DIR/registry.addr" ]; then REGISTRY_ADDR=$(cat "$STATE_DIR/registry.addr"); fi
fi

case ${1:-} in
  build) build ;;
  up) up ;;
  down) down ;;
  status) status ;;
  leftovers) [ "$ENGINE" = podman ] && [ ! -f "$CONTAINERS_CONF" ] && podman_conf; leftovers ;;
  env) env_lines ;;
  images) [ -f "$STATE_DIR/registry.addr" ] || die "images: no kind cluster is up (e2e/harness/cluster.sh up)"
          push_images ;;
  *) die "usage: kind.sh build|up|down|status|leftovers|env|images" ;;
esac
