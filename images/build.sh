#!/usr/bin/env bash
# Builds the project's container images from images/<name>/Dockerfile (docs/images.md):
#   images/build.sh [--engine buildah|docker] [--push REGISTRY[/PREFIX]] [base|pause|operator|orangefs|mpi|all]...
# Prints one line per image asked for on stdout, `<image-name> <where>`; logs go to stderr.
# --push: pushes the operator, OrangeFS and MPI images (`all` is those three) to
#   REGISTRY/PREFIX/<name>:<tag> (PREFIX defaults to pfslayout) and prints `<image-name> <ref>@<digest>`
#   instead. The registry is asked first (GET /v2/), before anything is built: one that does not answer
#   fails in one line naming it. Plain HTTP for a registry on loopback (127.0.0.1, localhost, [::1]) or
#   with PFSLAYOUT_REGISTRY_INSECURE=1, HTTPS otherwise. buildah pushes with skopeo (the OCI archive's
#   blobs as they are), docker with `docker push`.
#   buildah (default where buildah is installed: this machine kind, no Docker, no registry):
#     <where> is an OCI archive ~/.cache/pfs-layout-operator/images/<name>-<key>.tar, ready for
#     `ctr -n k8s.io images import` (it carries io.containerd.image.name) or `buildah pull oci-archive:`.
#     The key hashes everything the image is made of: its Dockerfile and the context files it copies,
#     the base image's key, the keys of the host-built trees or the content hashes of the sources, and
#     the key of the OrangeFS image (mpi). An archive whose key exists is not rebuilt, so a warm run only
#     hashes a few files. buildah's storage lives in ~/.cache/pfs-layout-operator/buildah (--root/--runroot).
#   docker (a laptop with a Docker engine): `docker build` of the same Dockerfiles and contexts, every
#     component compiled from source inside the build; <where> is `docker` (the engine's image store).
# `all` is pause operator orangefs mpi for buildah (base is built as their dependency; ask for it by name
# to get its line) and operator orangefs mpi for docker (Docker takes debian:12.12-slim from Docker Hub,
# and kind brings its own pause image).
# Contexts are assembled by this script (under the cache, never in the checkout): the files the
# Dockerfile copies, plus in/<component>/ holding either `source` (the verified archive from
# images/build/fetch-source.sh, or the shim's sources) or `tree/` (the host-built tree from
# images/build/host.sh). Which one: PFSLAYOUT_IMAGE_TREES=host|source; default `host` for buildah on a
# Debian 12 host (the trees link the same bookworm libraries as the image), `source` otherwise.
# Other settings: PFSLAYOUT_CACHE, PFSLAYOUT_SOURCE_MIRROR (fetch-source.sh), PFSLAYOUT_IMAGE_TAG (dev),
# PFSLAYOUT_CA_BUNDLE (the host CA bundle handed to pip inside the builds as the secret `ca-bundle`;
# default /etc/ssl/certs/ca-certificates.crt), PFSLAYOUT_APT_SOURCES (base.sh).
set -euo pipefail
shopt -s inherit_errexit  # functions called as $(...) stop at their first failure too
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build_dir=$here/build
# shellcheck source=sources.env
. "$here/sources.env"
CACHE_ROOT=${PFSLAYOUT_CACHE:-$HOME/.cache/pfs-layout-operator}
IMAGES_DIR=$CACHE_ROOT/images
BUILDAH_DIR=$CACHE_ROOT/buildah
TAG=${PFSLAYOUT_IMAGE_TAG:-dev}
CA_BUNDLE=${PFSLAYOUT_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# containerd's sandbox_image on the real node; pause.c comes from the k8s.io/kubernetes module the test
# cluster builds (e2e/harness/cluster/versions.env), read from the Go module cache.
PAUSE_NAME=localhost/pfslayout/pause:3.10
BASE_NAME=localhost/pfslayout/base:bookworm
# Bump when the way this script turns a context into an image changes (buildah flags, archive format):
# every image key changes with it.
DRIVER_REVISION=1

log() { printf 'images: %s\n' "$*" >&2; }
die() { printf 'images: %s\n' "$*" >&2; exit 1; }
h16() { sha256sum | cut -c1-16; }

engine=
push='' push_set=''
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --engine) engine=${2:-}; shift 2 || die "--engine needs buildah or docker" ;;
    --engine=*) engine=${1#--engine=}; shift ;;
    --push) push=${2:-} push_set=1; shift 2 || die "--push needs REGISTRY[/PREFIX], e.g. --push 127.0.0.1:26414" ;;
    --push=*) push=${1#--push=} push_set=1; shift ;;
    base|pause|operator|orangefs|mpi|all) targets+=("$1"); shift ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) die "unknown argument '$1': images/build.sh [--engine buildah|docker] [--push REGISTRY[/PREFIX]] [base|pause|operator|orangefs|mpi|all]" ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(all)
if [ -z "$engine" ]; then
  if command -v buildah >/dev/null; then engine=buildah
  elif command -v docker >/dev/null; then engine=docker
  else die "neither buildah nor docker is installed"; fi
fi
case $engine in buildah|docker) ;; *) die "--engine must be buildah or docker, not '$engine'" ;; esac
command -v "$engine" >/dev/null || die "$engine is not installed"

# --push: where to, and whether the registry answers, before anything is built.
# shellcheck source=build/registry-dest.sh
. "$build_dir/registry-dest.sh"
push_registry='' push_prefix='' push_scheme=https
if [ -n "$push_set" ]; then
  registry_parse "$push" pfslayout \
    || die "--push '$push' is not REGISTRY[/PREFIX] (e.g. 127.0.0.1:26414 or ghcr.io/you/pfs-layout-operator)"
  push_registry=$registry push_prefix=$prefix push_scheme=$scheme
  for t in "${targets[@]}"; do
    case $t in operator|orangefs|mpi|all) ;; *) die "--push pushes operator, orangefs and mpi, not '$t'" ;; esac
  done
  [ "$engine" = docker ] || command -v skopeo >/dev/null || die "skopeo is not installed (apt-get install skopeo): --push needs it with buildah"
  why=$(registry_answers) || die "--push: $why"
fi

host_is_bookworm() { (. /etc/os-release && [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ]); }
TREES=${PFSLAYOUT_IMAGE_TREES:-}
if [ -z "$TREES" ]; then
  if [ "$engine" = buildah ] && host_is_bookworm; then TREES=host; else TREES=source; fi
fi
case $TREES in host|source) ;; *) die "PFSLAYOUT_IMAGE_TREES must be host or source, not '$TREES'" ;; esac

# ---------------------------------------------------------------------------------------------------
# What each image is made of. files_of prints the repository files its context holds (NUL-separated);
# parts_of prints the in/<component> entries: "<component> <source-archive-name|shim>".

files_of() {
  (cd "$repo" && case $1 in
    operator) find images/operator/Dockerfile operator/pyproject.toml operator/README.md operator/src -type f \
                ! -name '*.pyc' ! -path '*/__pycache__/*' ! -path '*.egg-info/*' -print0 ;;
    orangefs) find images/orangefs/Dockerfile images/orangefs/entrypoint.sh images/build/orangefs.sh \
                images/build/orangefs-patches shim/tools/relayout -type f -print0 ;;
    mpi) find images/mpi/Dockerfile images/mpi/entrypoint.sh images/mpi/ssh_config images/mpi/sshd_config \
           images/build/mpich.sh images/build/mpich-patches images/build/ior.sh images/build/shim.sh -type f -print0 ;;
  esac | LC_ALL=C sort -z)
}
# openmpi-ior and openmpi-shim are the Open MPI flavours of ior and shim: the same sources and recipes,
# built against Debian's Open MPI (source_of names the source they share).
components_of() { case $1 in orangefs) echo orangefs ;; mpi) echo mpich ior openmpi-ior shim openmpi-shim ;; esac; }
source_of() { echo "${1#openmpi-}"; }
content_hash_of() {
  case $(source_of "$1") in orangefs) echo "$ORANGEFS_CONTENT_SHA256" ;; mpich) echo "$MPICH_CONTENT_SHA256" ;;
                            ior) echo "$IOR_CONTENT_SHA256" ;; esac
}
# The shim's sources as images/build/host.sh hashes them: all of shim/ but its build trees, its Python tests and
# shim/tools/ (standalone tools of other images: pfs-relayout is in the orangefs image's files).
shim_files() {
  (cd "$repo" && find shim \( -path shim/build -o -path shim/tools \) -prune -o -type f ! -name '*.py' ! -name '*.pyc' \
     ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z)
}
hash_files() { (cd "$repo" && xargs -0 sha256sum); }

pause_source() {
  local k8s dir
  k8s=$(sed -n 's/^K8S_VERSION=\([^[:space:]]*\).*/\1/p' "$repo/e2e/harness/cluster/versions.env")
  [ -n "$k8s" ] || die "no K8S_VERSION in e2e/harness/cluster/versions.env"
  dir=${GOMODCACHE:-$CACHE_ROOT/go/mod}/k8s.io/kubernetes@$k8s
  if [ ! -f "$dir/build/pause/linux/pause.c" ]; then
    command -v go >/dev/null || die "k8s.io/kubernetes@$k8s is not in the Go module cache and go is not installed (e2e/harness/cluster.sh build fetches it)"
    dir=$(GOMODCACHE=${GOMODCACHE:-$CACHE_ROOT/go/mod} GOFLAGS=-mod=mod GOTOOLCHAIN=local \
          go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  fi
  [ -f "$dir/build/pause/linux/pause.c" ] || die "build/pause/linux/pause.c not found in k8s.io/kubernetes@$k8s ($dir)"
  echo "$dir/build/pause/linux/pause.c"
}

declare -A KEY=()
key_of() { # memoised: the key of an image
  local name=$1 k
  if [ -n "${KEY[$name]:-}" ]; then echo "${KEY[$name]}"; return; fi
  case $name in
    base) k=$( { echo "base $DRIVER_REVISION $(uname -m)"; cat "$build_dir/base.sh" "$build_dir/oci.py"
                 "$build_dir/base.sh" --sources | while read -r f; do grep -v '^[[:space:]]*#' "$f" || true; done; } | h16) ;;
    pause) k=$( { echo "pause $DRIVER_REVISION $PAUSE_NAME $(uname -m)"; cat "$build_dir/pause.sh" "$build_dir/oci.py"
                  sha256sum < "$(pause_source)"; } | h16) ;;
    operator|orangefs|mpi)
      k=$( { echo "$name $DRIVER_REVISION $engine trees=$TREES base=$(key_of base)"
             [ "$name" = mpi ] && echo "orangefs-image=$(key_of orangefs)"
             files_of "$name" | hash_files
             local c tk
             for c in $(components_of "$name"); do
               # (an assignment, so a failing host.sh key stops here instead of hashing an empty key)
               if [ "$TREES" = host ]; then tk=$("$build_dir/host.sh" key "$c"); echo "$c tree $tk"
               elif [ "$(source_of "$c")" = shim ]; then echo "$c source jansson $JANSSON_CONTENT_SHA256"
                 shim_files | hash_files
               else echo "$c source $(content_hash_of "$c")"; fi
             done; } | h16) ;;
  esac
  KEY[$name]=$k
  echo "$k"
}

image_name() {
  case $1 in base) echo "$BASE_NAME" ;; pause) echo "$PAUSE_NAME" ;; *) echo "docker.io/pfslayout/$1:$TAG" ;; esac
}

# ---------------------------------------------------------------------------------------------------
# Contexts.

link_or_copy() { cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2"; cp -a "$1" "$2"; }; }

assemble_context() { # name dir
  local name=$1 ctx=$2 c
  mkdir -p "$ctx"
  files_of "$name" | (cd "$repo" && tar --null -T - -cf -) | tar -xf - -C "$ctx"
  for c in $(components_of "$name"); do
    mkdir -p "$ctx/in/$c"
    if [ "$TREES" = host ]; then
      link_or_copy "$("$build_dir/host.sh" path "$c")" "$ctx/in/$c/tree"
    elif [ "$(source_of "$c")" = shim ]; then
      mkdir -p "$ctx/in/$c/source"
      shim_files | (cd "$repo/shim" && sed -z 's|^shim/||' | tar --null -T - -cf -) | tar -xf - -C "$ctx/in/$c/source"
      # jansson's archive beside the shim's sources: shim.sh builds it into the shim (no download in the image)
      link_or_copy "$("$build_dir/fetch-source.sh" jansson)" "$ctx/in/$c/jansson.tar.gz"
    else
      link_or_copy "$("$build_dir/fetch-source.sh" "$(source_of "$c")")" "$ctx/in/$c/source"
    fi
  done
}

# The host trees must exist before their keys can name a context: build (or find) them first.
ensure_trees() {
  local c
  [ "$TREES" = host ] || return 0
  for c in $(components_of "$1"); do "$build_dir/host.sh" "$c" >/dev/null; done
}

# ---------------------------------------------------------------------------------------------------
# buildah

bah() { buildah --root "$BUILDAH_DIR/root" --runroot "$BUILDAH_DIR/runroot" --storage-driver overlay "$@"; }
local_ref() { echo "localhost/pfslayout/$1:$(key_of "$1")"; }

# Makes sure buildah's storage has image NAME under its keyed local name (FROM of the next build).
ensure_loaded() { # name archive
  local ref id
  ref=$(local_ref "$1")
  bah inspect --type image "$ref" >/dev/null 2>&1 && return 0
  id=$(bah pull --quiet "oci-archive:$2" | tail -n 1)
  bah tag "$id" "$ref"
}

archive_of() { echo "$IMAGES_DIR/$1-$(key_of "$1").tar"; }

# Keeps the three newest archives of an image (other settings, e.g. PFSLAYOUT_IMAGE_TREES=source or
# another tag, may be in use by another run on this machine) and buildah's keyed tags of those only.
forget_older() { # name
  local name=$1 ref
  find "$IMAGES_DIR" -maxdepth 1 -name "$name-*.tar" -printf '%T@ %p\n' | sort -rn | tail -n +4 \
    | cut -d' ' -f2- | xargs -r rm -f
  { bah images --format '{{.Name}}:{{.Tag}}' 2>/dev/null || true; } | { grep "^localhost/pfslayout/$name:" || true; } \
    | while read -r ref; do
        [ -f "$IMAGES_DIR/$name-${ref##*:}.tar" ] || bah rmi "$ref" >/dev/null 2>&1 || true
      done
  bah rmi --prune >/dev/null 2>&1 || true
}

buildah_image() { # name -> archive path on stdout
  local name=$1 archive start tmp log ctx args=()
  # Trees (and so the sources) first: a missing or corrupt archive fails before anything is built.
  case $name in
    base|pause) ;;
    orangefs|operator) ensure_trees "$name"; buildah_image base >/dev/null ;;
    mpi) ensure_trees orangefs; ensure_trees mpi; buildah_image base >/dev/null; buildah_image orangefs >/dev/null ;;
  esac
  archive=$(archive_of "$name")
  if [ -f "$archive" ]; then
    case $name in base|orangefs) ensure_loaded "$name" "$archive" ;; esac
    echo "$archive"
    return
  fi
  start=$(date +%s)
  mkdir -p "$IMAGES_DIR/logs"
  log="$IMAGES_DIR/logs/$name-$(key_of "$name").log"
  tmp=$(mktemp -d "$IMAGES_DIR/.$name.XXXXXX")
  # shellcheck disable=SC2064  # expand now: this very directory
  trap "rm -rf '$tmp'" RETURN
  log "building $name ($(image_name "$name"), key $(key_of "$name"), trees: $TREES; log: $log)"
  case $name in
    base) "$build_dir/base.sh" "$tmp/image.tar" "$BASE_NAME" >"$log" 2>&1 \
            || { tail -n 20 "$log" >&2; die "building the base image failed; the full log is $log"; }
          mv "$tmp/image.tar" "$archive"
          ensure_loaded base "$archive" ;;
    pause) "$build_dir/pause.sh" "$tmp/image.tar" "$PAUSE_NAME" "$(pause_source)" >"$log" 2>&1 \
             || { tail -n 20 "$log" >&2; die "building the pause image failed; the full log is $log"; }
           mv "$tmp/image.tar" "$archive" ;;
    *)
      ctx=$tmp/context
      assemble_context "$name" "$ctx"
      args=(--build-arg "BASE_IMAGE=$(local_ref base)")
      [ "$name" = mpi ] && args+=(--build-arg "ORANGEFS_IMAGE=$(local_ref orangefs)")
      # pip inside the build trusts what the host trusts (a TLS-inspecting proxy's CA): a build secret,
      # mounted for the RUN steps that ask for it and never committed (images/operator/Dockerfile).
      [ -s "$CA_BUNDLE" ] && args+=(--secret "id=ca-bundle,src=$(readlink -f "$CA_BUNDLE")")
      # chroot isolation: RUN steps share the host's network namespace (no CNI bridge, no iptables
      # rules) and need neither runc nor cgroups. Docker format: SHELL applies as with Docker.
      bah bud --pull-never --isolation chroot --format docker --layers=false --force-rm "${args[@]}" \
          -f "$ctx/images/$name/Dockerfile" -t "$(local_ref "$name")" "$ctx" >"$log" 2>&1 \
        || { tail -n 30 "$log" >&2; die "buildah bud of images/$name/Dockerfile failed; the full log is $log"; }
      bah push --quiet --format oci --disable-compression "$(local_ref "$name")" "oci:$tmp/layout" >>"$log" 2>&1 \
        || { tail -n 10 "$log" >&2; die "buildah push of $name failed; the full log is $log"; }
      python3 "$build_dir/oci.py" annotate "$tmp/layout" "$archive" --name "$(image_name "$name")" ;;
  esac
  forget_older "$name"
  log "built $name in $(( $(date +%s) - start )) s: $archive"
  echo "$archive"
}

# ---------------------------------------------------------------------------------------------------
# docker

docker_image() { # name
  local name=$1 tmp ctx args=()
  case $name in base|pause) die "$name is for buildah and containerd only; Docker uses debian:12.12-slim and kind's pause" ;; esac
  ensure_trees "$name"
  [ "$name" = mpi ] && docker_image orangefs >/dev/null
  tmp=$(mktemp -d "$IMAGES_DIR/.docker-$name.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  ctx=$tmp/context
  assemble_context "$name" "$ctx"
  [ "$name" = mpi ] && args+=(--build-arg "ORANGEFS_IMAGE=pfslayout/orangefs:$TAG")
  [ -s "$CA_BUNDLE" ] && args+=(--secret "id=ca-bundle,src=$(readlink -f "$CA_BUNDLE")")
  log "docker build of pfslayout/$name:$TAG (trees: $TREES)"
  DOCKER_BUILDKIT=1 docker build "${args[@]}" -f "$ctx/images/$name/Dockerfile" -t "pfslayout/$name:$TAG" "$ctx" >&2 \
    || die "docker build of images/$name/Dockerfile failed"
  echo docker
}

# Pushes one built image (its OCI archive, or the Docker engine's image) to the --push registry; prints
# the reference pushed, with its digest.
push_image() {
  local name=$1 where=$2 ref digest tls=true
  ref=$push_registry/$push_prefix/$name:$TAG
  [ "$push_scheme" = http ] && tls=false
  log "pushing $name to $ref"
  if [ "$engine" = buildah ]; then
    skopeo copy --quiet --dest-tls-verify="$tls" --digestfile "$IMAGES_DIR/.digest" "oci-archive:$where" "docker://$ref" >&2 \
      || die "skopeo copy of $name to $ref failed (above)"
    digest=$(cat "$IMAGES_DIR/.digest")
    rm -f "$IMAGES_DIR/.digest"
  else
    { docker tag "pfslayout/$name:$TAG" "$ref" && docker push "$ref" >&2; } || die "docker push of $ref failed (above)"
    digest=$(docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$ref" | sed -n "s|^$push_registry/$push_prefix/$name@||p" | head -n 1)
  fi
  [[ $digest == sha256:* ]] || die "no digest for $ref after the push"
  echo "$ref@$digest"
}

# ---------------------------------------------------------------------------------------------------

mkdir -p "$IMAGES_DIR"
exec 9>"$IMAGES_DIR/.build.lock"
if ! flock -n 9; then
  log "waiting for another images/build.sh (lock $IMAGES_DIR/.build.lock)"
  flock -w 7200 9 || die "timed out waiting for $IMAGES_DIR/.build.lock"
fi

# Leftovers of an interrupted run (temporary contexts, layouts, half-written archives): under the
# lock nothing else is using them.
find "$IMAGES_DIR" -mindepth 1 -maxdepth 1 -name '.*' ! -name .build.lock -exec rm -rf {} +

expanded=()
for t in "${targets[@]}"; do
  if [ "$t" = all ]; then
    if [ "$engine" = buildah ] && [ -z "$push_registry" ]; then expanded+=(pause operator orangefs mpi); else expanded+=(operator orangefs mpi); fi
  else expanded+=("$t"); fi
done
# Keys once, in dependency order, in this shell (key_of memoises; the builds run in subshells).
if [ "$engine" = buildah ]; then
  case " ${expanded[*]} " in *" operator "*|*" orangefs "*|*" mpi "*) key_of base >/dev/null ;; esac
  case " ${expanded[*]} " in *" orangefs "*|*" mpi "*) key_of orangefs >/dev/null ;; esac
  for t in "${expanded[@]}"; do key_of "$t" >/dev/null; done
fi
for t in "${expanded[@]}"; do
  if [ "$engine" = buildah ]; then where=$(buildah_image "$t"); else where=$(docker_image "$t"); fi
  if [ -n "$push_registry" ]; then where=$(push_image "$t" "$where"); fi
  echo "$(image_name "$t") $where"
done
