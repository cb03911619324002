#!/usr/bin/env bash
# Prints the fake HPC nodes kwok manages (it selects them by the kwok.x-k8s.io/node annotation).
# Usage: nodes.sh <count>
set -euo pipefail
count=${1:-4}
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
    type: kwok
status:
  capacity: {cpu: "32", memory: 128Gi, pods: "110", ephemeral-storage: 1Ti}
  allocatable: {cpu: "32", memory: 128Gi, pods: "110", ephemeral-storage: 1Ti}
NODE
done
