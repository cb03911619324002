#!/usr/bin/env bash
# Prints the fake HPC nodes kwok manages (it selects them by the kwok.x-k8s.io/node annotation).
# Usage: nodes.sh <count> [tainted]
# tainted (the kind cluster, where real nodes sit beside them): pfslayout.io/fake-node=true:NoSchedule, so
# only a pod that tolerates it — a test that needs many nodes — lands on a node where nothing runs.
set -euo pipefail
count=${1:-4}
taints=''
if [ "${2:-}" = tainted ]; then
  taints='
spec:
  taints: [{key: pfslayout.io/fake-node, value: "true", effect: NoSchedule}]'
fi
for i in $(seq 0 $((count - 1))); do
  cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: hpc-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: hpc-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node-role.kubernetes.io/hpc: ""
    pfslayout.io/hpc-node: "true"
    type: kwok$taints
status:
  capacity: {cpu: "32", memory: 128Gi, pods: "110", ephemeral-storage: 1Ti}
  allocatable: {cpu: "32", memory: 128Gi, pods: "110", ephemeral-storage: 1Ti}
NODE
done
