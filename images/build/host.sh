#!/usr/bin/env bash
# Host builds of what the images and the host test tiers share, each built once per machine:
#   host.sh COMPONENT                 prints the tree's path on stdout (logs on stderr)
#   host.sh env                       builds orangefs mpich ior shim, prints `export` lines (ORANGEFS_PREFIX,
#                                     PFSLAYOUT_MPICH_PREFIX, PFSLAYOUT_IOR_PREFIX, PFSLAYOUT_SHIM_PREFIX)
#   host.sh key|path COMPONENT        prints the cache key or path only (builds nothing)
# COMPONENT is orangefs, mpich, ior or shim, or the Open MPI flavours openmpi-ior and openmpi-shim: IOR
# and libpfsshim.so built by the same recipes against Debian's Open MPI (libopenmpi-dev, mpicc.openmpi)
# instead of the MPICH tree.
# A tree is the content of its image prefix (/opt/orangefs, /opt/mpich, /opt/ior, /opt/ior-openmpi; the
# shims' /usr/local), built by the same recipe the Dockerfile runs (images/build/<name>.sh) with DESTDIR
# staging, and kept under ~/.cache/pfs-layout-operator/host/<name>-<version>-<key>. The key hashes the
# pinned version and content hash (images/sources.env), the recipe script (less its `# shellcheck` lines;
# OrangeFS, MPICH: and its patches), the keys of the trees it builds against (for the Open MPI flavours:
# Open MPI's package version), the shim's sources (shims) and the distribution (the trees link its
# libraries). A build runs in a temporary directory that is renamed into place and stamped
# <tree>.complete; a lock makes concurrent runs wait.
# Using a tree on the host: its bin/ and sbin/ run directly with LD_LIBRARY_PATH=<orangefs>/lib:<mpich>/lib
# (no rpath anywhere); mpicc and pvfs2-config locate their own prefix. See docs/images.md.
# Settings: PFSLAYOUT_CACHE (cache root), PFSLAYOUT_SOURCE_MIRROR (fetch-source.sh),
# PFSLAYOUT_BUILD_JOBS (make -j, default nproc), PFSLAYOUT_HOST_PUBLISH (see publish()).
set -euo pipefail
shopt -s inherit_errexit  # functions called as $(...) stop at their first failure too
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../sources.env
. "$here/../sources.env"
CACHE_ROOT=${PFSLAYOUT_CACHE:-$HOME/.cache/pfs-layout-operator}
HOST_DIR=$CACHE_ROOT/host
COMPONENTS='orangefs|mpich|ior|shim|openmpi-ior|openmpi-shim'

log() { printf 'host-build: %s\n' "$*" >&2; }
die() { printf 'host-build: %s\n' "$*" >&2; exit 1; }
h16() { sha256sum | cut -c1-16; }

# The trees link Debian's libraries (libdb, libssl, libhwloc, libjansson): a tree built on another
# distribution or release must not be mistaken for this one's.
platform() { (. /etc/os-release && echo "${ID:-unknown}-${VERSION_ID:-unknown}") ; uname -m; }

# The shim's build inputs: all of shim/ but shim/build.sh's build trees (CMake reaches into tests/c,
# tests/programs and bench/, so a narrower list breaks as the shim grows) and shim/tools/, standalone
# tools the shim's CMake never builds (pfs-relayout goes into the OrangeFS image, not this tree).
shim_files() {
  (cd "$repo" && find shim \( -path shim/build -o -path shim/tools \) -prune -o -type f ! -name '*.py' ! -name '*.pyc' \
     ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z)
}

version_of() {
  case $1 in
    orangefs) echo "$ORANGEFS_VERSION" ;; mpich) echo "$MPICH_VERSION" ;; ior|openmpi-ior) echo "$IOR_VERSION" ;;
    shim|openmpi-shim) echo src ;;
  esac
}

# The Open MPI flavours build against Debian's Open MPI (what the image installs as openmpi-bin): its
# compiler wrapper, and the package version for their keys (a new Open MPI build rebuilds them).
OPENMPI_CC=/usr/bin/mpicc.openmpi
openmpi_version() {
  local v
  if ! v=$(dpkg-query -W -f '${Package}:${Architecture} ${Version}' libopenmpi-dev 2>/dev/null) \
     || [ ! -x "$OPENMPI_CC" ]; then
    die "the Open MPI trees need Debian's libopenmpi-dev ($OPENMPI_CC): apt-get install libopenmpi-dev"
  fi
  echo "$v"
}

# The checksums of a recipe's patches (images/build/<dir>/*.patch), in name order.
patch_sums() {
  (cd "$here" && find "$1" -name '*.patch' -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}

# A recipe as the keys hash it: without its lint directives (`# shellcheck ...` lines), which build nothing.
recipe_text() { sed '/^[[:space:]]*# shellcheck /d' "$here/$1"; }

key() {
  local v
  case $1 in
    orangefs) { echo "orangefs $ORANGEFS_VERSION $ORANGEFS_CONTENT_SHA256"; recipe_text orangefs.sh
                patch_sums orangefs-patches; platform; } | h16 ;;
    mpich) { echo "mpich $MPICH_VERSION $MPICH_CONTENT_SHA256 $(key orangefs)"; recipe_text mpich.sh
             patch_sums mpich-patches; platform; } | h16 ;;
    ior) { echo "ior $IOR_VERSION $IOR_CONTENT_SHA256 $(key mpich)"; recipe_text ior.sh; platform; } | h16 ;;
    shim) { echo "shim $(key mpich) $(key orangefs) jansson $JANSSON_CONTENT_SHA256"; recipe_text shim.sh; platform
            shim_files | (cd "$repo" && xargs -0 sha256sum); } | h16 ;;
    openmpi-ior) v=$(openmpi_version)
                 { echo "openmpi-ior $IOR_VERSION $IOR_CONTENT_SHA256 $v"; recipe_text ior.sh; platform; } | h16 ;;
    openmpi-shim) v=$(openmpi_version)
                  { echo "openmpi-shim $v jansson $JANSSON_CONTENT_SHA256"; recipe_text shim.sh; platform
                    shim_files | (cd "$repo" && xargs -0 sha256sum); } | h16 ;;
    *) die "unknown component '$1': $COMPONENTS" ;;
  esac
}

tree_path() { local k; k=$(key "$1"); echo "$HOST_DIR/$1-$(version_of "$1")-$k"; }

# Trees of a component's older keys: the newest two stay (a test session started before a recipe
# changed may still be running from the previous one), the rest go. A tree is <name>-<version>-<key>
# with a version free of dashes, so one component never matches another's trees. (The Open MPI flavours
# are named openmpi-*, not ior-*/shim-*: the `<name>-*` glob of earlier versions of this script, run by
# other checkouts sharing the cache, would take their trees for ior's and shim's.)
prune_older() { # dir name
  find "$1" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex ".*/$2-[^-/]+-[0-9a-f]{16}" \
      -printf '%T@ %p\n' | sort -rn | tail -n +3 \
    | cut -d' ' -f2- | while read -r old; do rm -rf "$old" "$old.complete"; done
}

# Every tree is reached by an unprivileged user too: the OrangeFS tier runs pvfs2-server as `nobody`
# when the tests run as root. Root's home is usually closed to others (0700), so as root a tree under
# $HOME is published as a hard-linked copy (no extra space) under PFSLAYOUT_HOST_PUBLISH (default
# /var/tmp/pfs-layout-operator), and that path is printed instead. Elsewhere the cache path is printed.
reachable_by_others() { # every directory from $1 up to / lets others traverse it (x, or t on /tmp)
  local d=$1
  while :; do
    case $(stat -c %A "$d" | cut -c10) in x|t) ;; *) return 1 ;; esac
    [ "$d" = / ] && return 0
    d=$(dirname "$d")
  done
}

publish() { # name tree -> prints the path to use
  local name=$1 tree=$2 pub dest
  if [ "$(id -u)" -ne 0 ] || reachable_by_others "$tree"; then echo "$tree"; return; fi
  pub=${PFSLAYOUT_HOST_PUBLISH:-/var/tmp/pfs-layout-operator}
  [ -e "$pub" ] || mkdir -p "$pub"  # 0755 by the chmod below, once it is known to be root's
  [ -d "$pub" ] && [ ! -L "$pub" ] && [ "$(stat -c %u "$pub")" = 0 ] \
    || die "$pub is not a directory owned by root: remove it or set PFSLAYOUT_HOST_PUBLISH"
  chmod 0755 "$pub"
  reachable_by_others "$pub" || die "$pub is not reachable by other users: set PFSLAYOUT_HOST_PUBLISH"
  dest=$pub/$(basename "$tree")
  if [ ! -f "$dest.complete" ]; then
    rm -rf "$dest" "$dest.tmp"
    cp -al "$tree" "$dest.tmp" 2>/dev/null || { rm -rf "$dest.tmp"; cp -a "$tree" "$dest.tmp"; }
    mv "$dest.tmp" "$dest"
    touch "$dest.complete"
    prune_older "$pub" "$name"
  fi
  echo "$dest"
}

# Runs a recipe into a fresh tree: build <name> <command...>; the command gets DESTDIR=$stage appended.
build() {
  local name=$1 out lock tmp log start rc image_prefix
  shift
  out=$(tree_path "$name")
  if [ -f "$out.complete" ] && [ -d "$out" ]; then echo "$out"; return; fi
  mkdir -p "$HOST_DIR/logs"
  lock=$HOST_DIR/.$name.lock
  exec 8>"$lock"
  if ! flock -n 8; then
    log "waiting for another build of $name (lock $lock)"
    flock -w 7200 8 || die "timed out waiting for $lock"
  fi
  if [ -f "$out.complete" ] && [ -d "$out" ]; then exec 8>&-; echo "$out"; return; fi
  case $name in orangefs) image_prefix=/opt/orangefs ;; mpich) image_prefix=/opt/mpich ;;
                ior) image_prefix=/opt/ior ;; openmpi-ior) image_prefix=/opt/ior-openmpi ;;
                shim|openmpi-shim) image_prefix=/usr/local ;; esac
  # Under the lock: what an interrupted build of this component left behind is nobody's.
  rm -rf "$out" "$out.complete" "$HOST_DIR/.$name-build."*
  tmp=$(mktemp -d "$HOST_DIR/.$name-build.XXXXXX")
  log="$HOST_DIR/logs/$(basename "$out").log"
  log "building $name into $out (log: $log)"
  start=$(date +%s)
  rc=0
  "$@" "$image_prefix" "$tmp/stage" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 25 "$log" >&2
    rm -rf "$tmp"
    die "building $name failed (exit $rc); the full log is $log"
  fi
  mv "$tmp/stage$image_prefix" "$out"
  rm -rf "$tmp"
  touch "$out.complete"
  log "built $name in $(( $(date +%s) - start )) s"
  prune_older "$HOST_DIR" "$name"
  exec 8>&-
  echo "$out"
}

# A recipe's argument list puts PREFIX and DESTDIR last; these wrappers give it the rest.
source_of() { "$here/fetch-source.sh" "$1"; }
with_libs() { # dirs... -- command: the linker and the loader find the trees' libraries (no rpath)
  local dirs=()
  while [ "$1" != -- ]; do dirs+=("$1"); shift; done
  shift
  LD_LIBRARY_PATH=$(IFS=:; echo "${dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"
}
# shellcheck disable=SC2153  # ARCHIVE (like OFS and MPI) is set for the one call by tree(): VAR=... build NAME recipe
recipe_orangefs() { "$here/orangefs.sh" "$ARCHIVE" "$1" "$2"; }
recipe_mpich() { with_libs "$OFS/lib" -- "$here/mpich.sh" "$ARCHIVE" "$1" "$OFS" "$2"; }
recipe_ior() { with_libs "$OFS/lib" "$MPI/lib" -- "$here/ior.sh" "$ARCHIVE" "$1" "$MPI" "$2"; }
recipe_shim() { with_libs "$OFS/lib" "$MPI/lib" -- "$here/shim.sh" --jansson "$ARCHIVE" "$repo/shim" "$1" "$MPI" "$OFS" "$2"; }
# The Open MPI flavours: Debian's Open MPI lives in the loader's default path; only libpfsshim.so, under
# lib/openmpi (pfsprobe stays MPICH's).
recipe_openmpi_ior() { "$here/ior.sh" "$ARCHIVE" "$1" "$OPENMPI_CC" "$2"; }
recipe_openmpi_shim() { "$here/shim.sh" --libdir lib/openmpi --jansson "$ARCHIVE" "$repo/shim" "$1" "$OPENMPI_CC" - "$2"; }

# The raw cache path of a component (what other components build against).
tree() {
  local name=$1 out
  out=$(tree_path "$name")
  if [ -f "$out.complete" ] && [ -d "$out" ]; then echo "$out"; return; fi
  # A missing or corrupt archive stops here with fetch-source's one line (a plain assignment, so the
  # failure of the substitution is not swallowed as it would be in a `VAR=$(...) command` prefix).
  local archive ofs mpi
  case $name in
    orangefs) archive=$(source_of orangefs)
              ARCHIVE=$archive build orangefs recipe_orangefs ;;
    mpich) ofs=$(tree orangefs); archive=$(source_of mpich)
           ARCHIVE=$archive OFS=$ofs build mpich recipe_mpich ;;
    ior) ofs=$(tree orangefs); mpi=$(tree mpich); archive=$(source_of ior)
         ARCHIVE=$archive OFS=$ofs MPI=$mpi build ior recipe_ior ;;
    shim) ofs=$(tree orangefs); mpi=$(tree mpich); archive=$(source_of jansson)
          ARCHIVE=$archive OFS=$ofs MPI=$mpi build shim recipe_shim ;;
    openmpi-ior) archive=$(source_of ior)
                 ARCHIVE=$archive build openmpi-ior recipe_openmpi_ior ;;
    openmpi-shim) archive=$(source_of jansson)
                  ARCHIVE=$archive build openmpi-shim recipe_openmpi_shim ;;
    *) die "unknown component '$name': $COMPONENTS" ;;
  esac
}

case ${1:-} in
  orangefs|mpich|ior|shim|openmpi-ior|openmpi-shim) t=$(tree "$1"); publish "$1" "$t" ;;
  key) key "${2:?usage: host.sh key $COMPONENTS}" ;;
  path) tree_path "${2:?usage: host.sh path $COMPONENTS}" ;;
  env)
    for c in orangefs mpich ior shim; do t=$(tree "$c"); p=$(publish "$c" "$t"); printf -v "P_$c" %s "$p"; done
    # shellcheck disable=SC2154  # set by the printf -v above
    printf 'export ORANGEFS_PREFIX=%q\nexport PFSLAYOUT_MPICH_PREFIX=%q\nexport PFSLAYOUT_IOR_PREFIX=%q\nexport PFSLAYOUT_SHIM_PREFIX=%q\n' \
      "$P_orangefs" "$P_mpich" "$P_ior" "$P_shim" ;;
  *) die "usage: host.sh $COMPONENTS|env | key NAME | path NAME" ;;
esac
