#!/usr/bin/env bash
# Makes the local control plane's PKI with openssl (ECDSA P-256, ~1 s): a cluster CA, the API server's
# serving cert, the service-account signing key pair, a front-proxy CA and client (aggregation/request-
# header auth), client certs per component identity, and kubeconfigs with the certs embedded.
# With a node name and address, also the real node's identities: kubelet (client and serving),
# kube-proxy and CoreDNS.
# Usage: pki.sh <dir> <apiserver-port> [<node-name> <node-ip>]. Existing files are kept.
set -euo pipefail
dir=${1:?usage: pki.sh <dir> <apiserver-port>}
port=${2:?usage: pki.sh <dir> <apiserver-port>}
node_name=${3:-}
node_ip=${4:-}
mkdir -p "$dir"
cd "$dir"
[ -f .complete ] && exit 0
umask 077
days=3650

key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.key" 2>/dev/null; }

ca() { # name CN
  key "$1"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days $days -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

cert() { # name ca subject extendedKeyUsage [subjectAltName]
  key "$1"
  local ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$4"
  [ -n "${5:-}" ] && ext+=$'\n'"subjectAltName=$5"
  openssl req -new -key "$1.key" -subj "$3" 2>/dev/null |
    openssl x509 -req -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days $days -out "$1.crt" \
      -extfile <(printf '%s\n' "$ext") 2>/dev/null
}

kubeconfig() { # file user-cert-name
  local ca_b64 crt_b64 key_b64
  ca_b64=$(base64 -w0 ca.crt); crt_b64=$(base64 -w0 "$2.crt"); key_b64=$(base64 -w0 "$2.key")
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: pfslayout-e2e
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority-data: $ca_b64
users:
- name: $2
  user:
    client-certificate-data: $crt_b64
    client-key-data: $key_b64
contexts:
- name: pfslayout-e2e
  context: {cluster: pfslayout-e2e, user: $2}
current-context: pfslayout-e2e
KC
}

ca ca pfslayout-e2e-ca
ca front-proxy-ca pfslayout-e2e-front-proxy-ca
cert apiserver ca /CN=kube-apiserver serverAuth \
  "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert front-proxy-client front-proxy-ca /CN=front-proxy-client clientAuth
cert admin ca "/O=system:masters/CN=pfslayout-e2e-admin" clientAuth
cert kube-controller-manager ca /CN=system:kube-controller-manager clientAuth
cert kube-scheduler ca /CN=system:kube-scheduler clientAuth
cert kwok ca "/O=system:masters/CN=kwok-controller" clientAuth
cert mpi-operator ca "/O=system:masters/CN=mpi-operator" clientAuth
key sa
openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null

kubeconfig admin.kubeconfig admin
kubeconfig controller-manager.kubeconfig kube-controller-manager
kubeconfig scheduler.kubeconfig kube-scheduler
kubeconfig kwok.kubeconfig kwok
kubeconfig mpi-operator.kubeconfig mpi-operator
if [ -n "$node_name" ]; then
  # The Node authorizer knows a kubelet by this exact subject.
  cert kubelet ca "/O=system:nodes/CN=system:node:$node_name" clientAuth
  cert kubelet-serving ca "/CN=$node_name" serverAuth "IP:$node_ip,DNS:$node_name"
  # Bound to system:node-proxier by the API server's default RBAC.
  cert kube-proxy ca /CN=system:kube-proxy clientAuth
  cert coredns ca /CN=pfslayout-e2e:coredns clientAuth
  kubeconfig kubelet.kubeconfig kubelet
  kubeconfig kube-proxy.kubeconfig kube-proxy
  kubeconfig coredns.kubeconfig coredns
fi
# Readable by the user only (umask above), but the CA cert is public by nature.
chmod 644 ca.crt
touch .complete
