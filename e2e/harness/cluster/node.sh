# The real node of the local test cluster: containerd + runc, kubelet, the bridge CNI, kube-proxy and
# CoreDNS as host processes, so pods scheduled to it really run (docs/test-cluster.md, "The real node").
# Sourced by local.sh, which provides start/pid_of/stop_group/wait_for/kubectl; never run.
# shellcheck shell=bash

# Off (0) for a cluster that needs no real pods (a second cluster on the same machine: there is one
# real node per machine, it owns the bridge, the kubelet port and the kubepods cgroups).
REAL_NODE=${PFSLAYOUT_E2E_REAL_NODE:-1}
NODE_NAME=${PFSLAYOUT_E2E_NODE_NAME:-real-node}
BRIDGE=${PFSLAYOUT_E2E_BRIDGE:-pfslbr0}
# A /24 that nothing else on the machine routes: the node's address is .1, pods get .10-.250.
NODE_NET=${PFSLAYOUT_E2E_NODE_NET:-10.250.0}
NODE_IP=$NODE_NET.1
NODE_DIR=$STATE_DIR/node
# The images outlive the cluster: containerd's content store and snapshots are a cache (a warm `up`
# imports nothing); everything that runs (state, sockets, netns, pods) lives in the state directory.
CONTAINERD_ROOT=$CACHE_ROOT/containerd-root
CONTAINERD_SOCK=$NODE_DIR/containerd/containerd.sock
NODE_OWNER=$CACHE_ROOT/real-node.owner
NODE_COMPONENTS=(registry containerd apiserver-forwarder coredns kubelet kube-proxy)
# What kubelet (vm.*, kernel.*) and the node's routing (ip_forward) change; `down` restores each.
NODE_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
              net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max
              net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait)
FWD_CHAIN=PFSLAYOUT-NODE-FWD
# containerd's sandbox image: built from the Kubernetes sources by images/build.sh, never pulled.
PAUSE_IMAGE=localhost/pfslayout/pause:3.10

ctr_() { ctr --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }

node_preflight() {
  [ "$(id -u)" -eq 0 ] || die "the real node needs root (containerd, kubelet, a bridge): run as root or set PFSLAYOUT_E2E_REAL_NODE=0 for a kwok-only cluster"
  local b
  for b in containerd runc ctr iptables ip socat /usr/lib/cni/bridge /usr/lib/cni/host-local; do
    command -v "$b" >/dev/null || [ -x "$b" ] || die "$b is missing (e2e/harness/setup/host-packages.sh installs it)"
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    node_reclaim_stale_bridge
  fi
  if ip -4 route show | grep -q "^$NODE_NET\."; then
    die "$NODE_NET.0/24 is already routed on this machine: set PFSLAYOUT_E2E_NODE_NET to a free /24 prefix (e.g. 10.251.0)"
  fi
  local owner
  owner=$(cat "$NODE_OWNER" 2>/dev/null || true)
  if [ -n "$owner" ] && [ "$owner" != "$STATE_DIR" ] && [ -d "$owner/node" ] && \
     pgrep -f -- "--config $owner/node/containerd.toml" >/dev/null; then
    die "a real node already runs for the cluster in $owner (one per machine): stop it with PFSLAYOUT_E2E_STATE=$owner e2e/harness/cluster.sh down, or set PFSLAYOUT_E2E_REAL_NODE=0"
  fi
  local h
  for h in /sys/fs/cgroup/*/kubepods; do
    if [ -d "$h" ]; then
      die "$h exists (a kubelet runs, or a crashed run left it): stop that kubelet, or remove the empty cgroup directories below it (rmdir, deepest first)"
    fi
  done
}

# The bridge names the state directory of the cluster that made it (its ifalias), so a later run -- from
# another checkout, as CI's is -- can tell a crashed run's leftover from a live cluster's or a stranger's.
BRIDGE_ALIAS_PREFIX=pfslayout-e2e:

# A bridge of this name exists. Reclaim it when this harness made it and its cluster no longer runs (a
# crashed run or a machine restored from a snapshot leave it behind); refuse anything else.
node_reclaim_stale_bridge() {
  local alias owner
  alias=$(cat "/sys/class/net/$BRIDGE/ifalias" 2>/dev/null || true)
  case $alias in
    "$BRIDGE_ALIAS_PREFIX"/*) owner=${alias#"$BRIDGE_ALIAS_PREFIX"} ;;
    *) die "network device $BRIDGE already exists and this harness did not make it (no $BRIDGE_ALIAS_PREFIX alias); not reusing it: set PFSLAYOUT_E2E_BRIDGE to another name, or delete it (ip link delete $BRIDGE) if it is a leftover" ;;
  esac
  # Every process of a real node names its node directory (containerd's and kubelet's --config, the shims'
  # -address), so none left means the cluster is gone.
  if pgrep -f -- "$owner/node/" >/dev/null; then
    die "network device $BRIDGE belongs to the cluster in $owner, which still runs: stop it with PFSLAYOUT_E2E_STATE=$owner e2e/harness/cluster.sh down, or set PFSLAYOUT_E2E_BRIDGE to another name"
  fi
  log "reclaiming network device $BRIDGE left by the cluster in $owner, which no longer runs"
  if pgrep -f -- "--config=?[^ ]*/node/(containerd\.toml|kubelet\.yaml)" >/dev/null; then
    # Another real node runs: the iptables chains, kubepods cgroups and sysctls are its now.
    ip link delete "$BRIDGE"
    return 0
  fi
  # Its API server forwarders (socat) do not name the node directory; they listen on the bridge's address.
  local ip
  for ip in $(ip -4 -o addr show dev "$BRIDGE" | awk '{sub("/.*", "", $4); print $4}'); do
    pkill -KILL -f -- "TCP-LISTEN:[0-9]+,bind=$ip," 2>/dev/null || true
  done
  node_iptables_clean iptables
  node_iptables_clean ip6tables
  node_umount_below "$owner/node"
  # The crashed run's containerd root lives under its own cache directory (another HOME, maybe).
  local m
  while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done \
    < <(awk '$2 ~ /\/pfs-layout-operator\/containerd-root\// {print $2}' /proc/self/mounts | sort -r)
  node_remove_cgroups
  ip link delete "$BRIDGE"
  node_restore_sysctls "$owner/node/sysctl.saved"
}

# Writes back the sysctls `up` recorded in the file $1 (when there is one).
node_restore_sysctls() {
  [ -f "$1" ] || return 0
  local kv
  while IFS= read -r kv; do sysctl -qw "$kv" 2>/dev/null || true; done < "$1"
}

node_save_sysctls() {
  local s v
  : > "$NODE_DIR/sysctl.saved"
  for s in "${NODE_SYSCTLS[@]}"; do
    v=$(sysctl -n "$s" 2>/dev/null) || continue
    printf '%s=%s\n' "$s" "$v" >> "$NODE_DIR/sysctl.saved"
  done
}

node_network_up() {
  ip link add "$BRIDGE" type bridge
  echo "$BRIDGE" > "$NODE_DIR/bridge.created"
  ip link set dev "$BRIDGE" alias "$BRIDGE_ALIAS_PREFIX$STATE_DIR"
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Pods reach each other through Services (DNAT, then forwarded back onto the bridge). Nothing may
  # leave the bridge for another interface: pods talk to the node and to each other only.
  sysctl -qw net.ipv4.ip_forward=1
  iptables -N "$FWD_CHAIN"
  iptables -A "$FWD_CHAIN" -i "$BRIDGE" ! -o "$BRIDGE" -j DROP
  iptables -A "$FWD_CHAIN" -o "$BRIDGE" ! -i "$BRIDGE" -j DROP
  iptables -I FORWARD 1 -j "$FWD_CHAIN"
  mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/cni/ipam"
  cat > "$NODE_DIR/cni/net.d/10-pfslayout.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "pfslayout",
  "plugins": [
    {
      "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$NODE_DIR/cni/ipam",
        "ranges": [[{"subnet": "$NODE_NET.0/24", "rangeStart": "$NODE_NET.10", "rangeEnd": "$NODE_NET.250",
                     "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

node_containerd_config() {
  mkdir -p "$NODE_DIR/containerd" "$CONTAINERD_ROOT"
  cat > "$NODE_DIR/containerd.toml" <<TOML
# Generated by e2e/harness/cluster/node.sh; the settings and why: docs/test-cluster.md ("The real node").
version = 2
root = "$CONTAINERD_ROOT"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$CONTAINERD_ROOT/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower a sandbox's oom_score_adj to -998.
  restrict_oom_score_adj = true
  # An \`ip netns add\` anywhere (the performance lab) makes /run/netns a shared mount and hides
  # containerd's netns mounts there: keep them in our own state directory.
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$NODE_DIR/cni/net.d"
  # Pulls go to the test cluster's registry (registry.sh, registry_hosts).
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$NODE_DIR/containerd/certs.d"
TOML
  registry_hosts "$NODE_DIR/containerd/certs.d"
}

node_kubelet_config() {
  mkdir -p "$NODE_DIR/kubelet" "$NODE_DIR/pod-logs"
  echo "nameserver $NODE_IP" > "$NODE_DIR/resolv.conf"
  cat > "$NODE_DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $PORT_KUBELET_HEALTH
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
# cgroup v1 hybrid, no systemd as PID 1, Debian's containerd 1.6 (no RuntimeConfig call).
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$NODE_IP]
clusterDomain: cluster.local
resolvConf: $NODE_DIR/resolv.conf
podLogsDir: $NODE_DIR/pod-logs
# Images are imported, never pulled: garbage collection must not delete them, and a busy shared disk
# must not evict the test's pods.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
registerNode: true
maxPods: 60
YAML
}

node_corefile() {
  cat > "$NODE_DIR/Corefile" <<COREFILE
# Cluster DNS only: no forward plugin, so pods resolve Service and pod names and nothing outside.
.:53 {
    bind $NODE_IP
    errors
    health 127.0.0.1:$PORT_COREDNS_HEALTH
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $PKI/coredns.kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
COREFILE
}

node_kube_proxy_config() {
  cat > "$NODE_DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:$PORT_KUBE_PROXY_HEALTH
metricsBindAddress: 127.0.0.1:$PORT_KUBE_PROXY_METRICS
mode: iptables
clusterCIDR: $NODE_NET.0/24
nodePortAddresses: [$NODE_IP/32]
iptables:
  # No route_localnet sysctl: NodePorts are not served on 127.0.0.1.
  localhostNodePorts: false
  syncPeriod: 30s
  minSyncPeriod: 0s
# Zero keeps the machine's conntrack settings as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
}

# The kubernetes Service (10.96.0.1:443) needs an endpoint pods can reach: the API server binds
# 127.0.0.1 only, so a forwarder on the node's bridge address stands in for it.
node_api_endpoints() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes-real-node
  namespace: default
  labels:
    kubernetes.io/service-name: kubernetes
    endpointslice.kubernetes.io/managed-by: pfslayout-e2e
addressType: IPv4
endpoints:
- addresses: [$NODE_IP]
  conditions: {ready: true}
ports:
- name: https
  port: $PORT_APISERVER
  protocol: TCP
---
# What CoreDNS reads to answer cluster names (the same rules as its upstream deployment's ClusterRole).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "pfslayout-e2e:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "pfslayout-e2e:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "pfslayout-e2e:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "pfslayout-e2e:coredns"}
YAML
}

# The images of images/build.sh (one `<name> <archive>` line each): the sandbox image (pause) is imported
# into containerd — the kubelet never pulls it — and the project's images are pushed to the registry
# (images/build.sh --push), whence the kubelet pulls them when a pod first needs them. A tag containerd
# holds but did not pull at the registry's digest (an imported copy, an image rebuilt since) is dropped
# from containerd, so the next pod pulls it. The pushed references are recorded in $NODE_DIR/images.pushed
# (`<name> <registry>/<repository>:<tag>@<digest>`), which the e2e tests read.
node_import_images() {
  local list=$NODE_DIR/images.list pushed=$NODE_DIR/images.pushed name archive stamp
  local names=() n
  # PFSLAYOUT_E2E_IMAGES narrows what is built (e.g. `pause` for a bare node).
  # shellcheck disable=SC2086  # a list of image names
  "$REPO_ROOT/images/build.sh" ${PFSLAYOUT_E2E_IMAGES:-all} > "$list" || die "images/build.sh failed (see above)"
  mkdir -p "$CONTAINERD_ROOT/pfslayout-imported"
  while read -r name archive; do
    [ -n "$name" ] || continue
    case $name in
      */pause:*) ;;
      *) n=${name##*/}; names+=("${n%%:*}"); continue ;;
    esac
    stamp=$CONTAINERD_ROOT/pfslayout-imported/$(basename "$archive")
    if [ -f "$stamp" ] && ctr_ images ls -q | grep -x "$name" >/dev/null; then continue; fi
    log "importing $name into the real node's containerd"
    ctr_ images import "$archive" >/dev/null || die "ctr import of $archive ($name) failed"
    # grep without -q reads the whole listing: with -q it stops early, ctr dies of SIGPIPE, and pipefail
    # would call a good import a failure
    ctr_ images ls -q | grep -x "$name" >/dev/null || die "$archive did not provide image $name after import"
    touch "$stamp"
  done < "$list"
  : > "$pushed"
  [ ${#names[@]} -gt 0 ] || return 0
  "$REPO_ROOT/images/build.sh" --push "$REGISTRY_ADDR" "${names[@]}" > "$pushed" || die "images/build.sh --push $REGISTRY_ADDR failed (see above)"
  local digest
  while read -r name digest; do
    log "dropping $name from containerd: not pulled from the registry at $digest"
    ctr_ images rm "$name" >/dev/null
  done < <(registry_stale_tags "$(ctr_ images ls -q)" "$pushed")
  local ref
  while read -r ref; do
    log "dropping $ref from containerd: an earlier build"
    ctr_ images rm "$ref" >/dev/null
  done < <(registry_old_pulls "$(ctr_ images ls -q)" "$pushed")
}

node_ready() {
  [ "$(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

node_up() {
  [ "$REAL_NODE" = 1 ] || return 0
  # node_preflight ran before the control plane started (local.sh), so a refusal starts nothing.
  mkdir -p "$NODE_DIR"
  echo "$STATE_DIR" > "$NODE_OWNER"
  node_save_sysctls
  node_network_up
  registry_up
  node_containerd_config
  start containerd containerd --config "$NODE_DIR/containerd.toml" --log-level warn
  wait_for "containerd's socket" containerd ctr_ version
  node_import_images

  start apiserver-forwarder socat "TCP-LISTEN:$PORT_APISERVER,bind=$NODE_IP,fork,reuseaddr" \
    "TCP:127.0.0.1:$PORT_APISERVER"
  node_api_endpoints
  node_corefile
  start coredns "$COREDNS_DIR/bin/coredns" -conf "$NODE_DIR/Corefile"
  wait_for "CoreDNS health" coredns curl -fsS "http://127.0.0.1:$PORT_COREDNS_HEALTH/health"

  node_kubelet_config
  start kubelet "$K8S_DIR/bin/kubelet" --config="$NODE_DIR/kubelet.yaml" \
    --kubeconfig="$PKI/kubelet.kubeconfig" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
    --root-dir="$NODE_DIR/kubelet" --cert-dir="$NODE_DIR/kubelet/pki" \
    --node-labels="pfslayout.io/real-node=true" \
    --register-with-taints="pfslayout.io/real-node=true:NoSchedule" --v=1
  node_kube_proxy_config
  start kube-proxy "$K8S_DIR/bin/kube-proxy" --config="$NODE_DIR/kube-proxy.yaml" --v=1
  wait_for "node $NODE_NAME Ready" kubelet node_ready
  local c
  for c in "${NODE_COMPONENTS[@]}"; do alive_or_die "$c"; done
}

# Removes every KUBE-* chain (kube-proxy's and kubelet's canaries) and ours from one iptables binary.
node_iptables_clean() {
  local ipt=$1 t rule chain
  command -v "$ipt" >/dev/null || return 0
  for t in filter nat mangle raw; do
    "$ipt" -t "$t" -S >/dev/null 2>&1 || continue
    # Rules in other chains that jump to ours first, then our chains themselves.
    while IFS= read -r rule; do
      # shellcheck disable=SC2086  # the rule is a list of iptables words
      "$ipt" -t "$t" ${rule/-A /-D } 2>/dev/null || true
    done < <("$ipt" -t "$t" -S | grep -E "^-A [A-Z]+ .*-j (KUBE-|$FWD_CHAIN)" | grep -vE '^-A (KUBE-|PFSLAYOUT-)' || true)
    while IFS= read -r chain; do
      "$ipt" -t "$t" -F "$chain" 2>/dev/null || true
    done < <("$ipt" -t "$t" -S | awk -v fwd="$FWD_CHAIN" '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == fwd) {print $2}')
    while IFS= read -r chain; do
      "$ipt" -t "$t" -X "$chain" 2>/dev/null || true
    done < <("$ipt" -t "$t" -S | awk -v fwd="$FWD_CHAIN" '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == fwd) {print $2}')
  done
}

# Unmounts whatever is still mounted below a directory, deepest first.
node_umount_below() {
  local m
  [ -d "$1" ] || return 0
  while IFS= read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r)
}

node_remove_cgroups() {
  local h d
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h/kubepods" ] || continue
    # Depth first: a cgroup directory can only be removed once its children are.
    while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done < <(find "$h/kubepods" -depth -type d)
  done
}

node_down() {
  [ -d "$NODE_DIR" ] || return 0
  local c
  # kubelet first, so nothing restarts the containers we stop next.
  stop_group kubelet
  if pid_of containerd >/dev/null; then
    local tasks
    tasks=$(ctr_ tasks ls -q 2>/dev/null || true)
    for c in $tasks; do ctr_ tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    for c in $tasks; do ctr_ tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(ctr_ containers ls -q 2>/dev/null || true); do ctr_ containers delete "$c" >/dev/null 2>&1 || true; done
  fi
  stop_group containerd kube-proxy coredns apiserver-forwarder registry
  # socat forks one child per connection; they share the listener's process group.
  pkill -KILL -f -- "TCP-LISTEN:[0-9]+,bind=$NODE_IP," 2>/dev/null || true
  # Shims whose container was not deleted (containerd gone first) exit with their task; kill leftovers.
  pkill -KILL -f -- "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null || true
  local k8s_bin=${K8S_DIR}/bin/kube-proxy
  if [ -x "$k8s_bin" ]; then "$k8s_bin" --cleanup >/dev/null 2>&1 || true; fi
  node_iptables_clean iptables
  node_iptables_clean ip6tables
  node_umount_below "$NODE_DIR"
  node_umount_below "$CONTAINERD_ROOT"
  node_remove_cgroups
  if [ -f "$NODE_DIR/bridge.created" ]; then
    ip link delete "$(cat "$NODE_DIR/bridge.created")" 2>/dev/null || true
    rm -f "$NODE_DIR/bridge.created"
  fi
  node_restore_sysctls "$NODE_DIR/sysctl.saved"
  # kubelet links every container log into /var/log/containers; ours point into the state directory.
  local l
  for l in /var/log/containers/*.log; do
    [ -L "$l" ] && case $(readlink "$l") in "$NODE_DIR"/*) rm -f "$l" ;; esac
  done
  [ "$(cat "$NODE_OWNER" 2>/dev/null)" = "$STATE_DIR" ] && rm -f "$NODE_OWNER"
  return 0
}

# What `down` must leave behind: nothing. Prints one line per leftover; used by `status --leftovers`
# and the e2e test of a clean stop.
node_leftovers() {
  local c
  for c in "${NODE_COMPONENTS[@]}"; do pid_of "$c" >/dev/null && echo "process: $c"; done
  pgrep -f -- "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" >/dev/null && echo "process: containerd shims"
  awk -v d="$NODE_DIR/" -v r="$CONTAINERD_ROOT/" 'index($2, d) == 1 || index($2, r) == 1 {print "mount: " $2}' /proc/self/mounts
  local h
  for h in /sys/fs/cgroup/*/; do [ -d "$h/kubepods" ] && echo "cgroup: ${h}kubepods"; done
  ip link show "$BRIDGE" >/dev/null 2>&1 && echo "link: $BRIDGE"
  local t
  for t in filter nat mangle raw; do
    iptables -t "$t" -S 2>/dev/null | awk -v t="$t" -v fwd="$FWD_CHAIN" '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == fwd) {print "iptables " t ": " $2}'
  done
  if [ -f "$NODE_DIR/sysctl.saved" ]; then
    local kv k v
    while IFS= read -r kv; do
      k=${kv%%=*}; v=${kv#*=}
      [ "$(sysctl -n "$k" 2>/dev/null)" = "$v" ] || echo "sysctl: $k is $(sysctl -n "$k" 2>/dev/null), was $v"
    done < "$NODE_DIR/sysctl.saved"
  fi
  return 0
}
