#!/usr/bin/env bash
# The pause image containerd starts as every pod's sandbox (its sandbox_image), built from source since
# no registry is reachable: build/pause/linux/pause.c of the k8s.io/kubernetes module the test cluster
# already builds from the Go module proxy, compiled static, packed as an OCI archive.
#   pause.sh ARCHIVE NAME PAUSE_C
# Config as upstream's image: ENTRYPOINT ["/pause"], USER 65535:65535.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: pause.sh ARCHIVE NAME PAUSE_C"
archive=${1:?$usage}
name=${2:?$usage}
src=${3:?$usage}
[ -f "$src" ] || { echo "pause.sh: $src is missing" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# VERSION is only printed by `pause -v`; the image's tag is the version containerd is configured with.
gcc -Os -static -Wall -Werror -DVERSION="${name##*:}" -o "$tmp/pause" "$src"
strip "$tmp/pause"
python3 "$here/oci.py" rootfs-files "$archive" --name "$name" --file "$tmp/pause:/pause:0755" \
  --entrypoint '["/pause"]' --user 65535:65535 --history "gcc -Os -static build/pause/linux/pause.c (images/build/pause.sh)"
