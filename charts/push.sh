#!/usr/bin/env bash
# Packages the chart and pushes it to an OCI registry, the way users install it
# (`helm install pfs-layout-operator oci://REGISTRY/PREFIX/pfs-layout-operator --version VERSION`):
#   charts/push.sh [--images REGISTRY/PREFIX] REGISTRY[/PREFIX] [VERSION] [CHART_DIR]
# PREFIX defaults to `charts`, VERSION to the chart's own (Chart.yaml), CHART_DIR to this checkout's chart
# (another one: an older release's, as the upgrade test pushes it). Prints one line,
# `oci://REGISTRY/PREFIX/pfs-layout-operator VERSION sha256:<digest>`; logs go to stderr.
# --images REGISTRY/PREFIX makes the package a release: its appVersion is VERSION and its default images
# are the ones `images/build.sh --push REGISTRY/PREFIX` pushed with PFSLAYOUT_IMAGE_TAG=VERSION
# (PREFIX/operator at the appVersion, PREFIX/orangefs:VERSION, PREFIX/mpi:VERSION), so installing it
# needs no image value. Without it the chart's own values (pfslayout/*:dev) are packaged as they are.
# The registry is asked first (GET /v2/): one that does not answer fails in one line naming its URL.
# Plain HTTP for a registry on loopback (127.0.0.1, localhost, [::1]) or with PFSLAYOUT_REGISTRY_INSECURE=1,
# HTTPS otherwise (log in first with `helm registry login` where the registry needs it). Helm is $HELM,
# else the one on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

die() { printf 'charts/push.sh: %s\n' "$*" >&2; exit 2; }

usage="usage: charts/push.sh [--images REGISTRY/PREFIX] REGISTRY[/PREFIX] [VERSION] [CHART_DIR]"
images=''
case ${1:-} in
  -h|--help) sed -n '2,15p' "$0" | cut -c3-; exit 0 ;;
  --images) images=${2:-}; shift 2 || die "--images needs REGISTRY/PREFIX, e.g. --images ghcr.io/you/pfs-layout-operator" ;;
  --images=*) images=${1#--images=}; shift ;;
esac
[ -n "${1:-}" ] || die "$usage"
dest=$1 version=${2:-} chart=${3:-$here/pfs-layout-operator}
# shellcheck source=../images/build/registry-dest.sh
. "$here/../images/build/registry-dest.sh"
registry_parse "$dest" charts || die "'$dest' is not REGISTRY[/PREFIX] (e.g. 127.0.0.1:26414 or ghcr.io/you/charts)"
[ -f "$chart/Chart.yaml" ] || die "no Chart.yaml in '$chart': name the chart directory"
name=$(sed -n 's/^name:[[:space:]]*//p' "$chart/Chart.yaml" | tr -d '"')
[ -n "$version" ] || version=$(sed -n 's/^version:[[:space:]]*//p' "$chart/Chart.yaml" | tr -d '"')
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] \
  || die "version '$version' is not SemVer 2 (MAJOR.MINOR.PATCH[-PRERELEASE]): Helm refuses it"

dest_registry=$registry dest_prefix=$prefix dest_scheme=$scheme
if [ -n "$images" ]; then
  registry_parse "$images" '' && [ -n "$prefix" ] \
    || die "--images '$images' is not REGISTRY/PREFIX (where images/build.sh --push pushed them, e.g. ghcr.io/you/pfs-layout-operator)"
fi
registry=$dest_registry prefix=$dest_prefix scheme=$dest_scheme

plain=()
[ "$scheme" = http ] && plain=(--plain-http)
why=$(registry_answers) || die "$why"
helm=${HELM:-helm}
command -v "$helm" >/dev/null || die "helm is not installed (e2e/harness/cluster.sh build helm builds it; set HELM)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
app=()
if [ -n "$images" ]; then
  # A copy of the chart with the release's images as its defaults. Each line is matched exactly, so a
  # values.yaml whose image lines changed fails here instead of releasing a chart that names `dev`.
  cp -r "$chart" "$tmp/chart"
  chart=$tmp/chart
  release_value() {  # release_value SECTION KEY VALUE: sets `  KEY: VALUE` under the top-level `SECTION:`
    awk -v section="$1:" -v key="  $2:" -v value="$3" '
      /^[^ #]/ { inside = ($0 == section) }
      inside && index($0, key) == 1 { print key " " value; done++; next }
      { print }
      END { exit done == 1 ? 0 : 1 }' "$chart/values.yaml" > "$tmp/values.yaml" \
      || die "$chart/values.yaml has no single '$2:' under '$1:' to set to the release's image"
    mv "$tmp/values.yaml" "$chart/values.yaml"
  }
  release_value image repository "$images/operator"
  release_value image tag '""'
  release_value images orangefs "$images/orangefs:$version"
  release_value images mpi "$images/mpi:$version"
  app=(--app-version "$version")
fi
"$helm" package "$chart" --version "$version" "${app[@]}" --destination "$tmp" >&2
# Helm prints the digest it pushed ("Digest: sha256:..."; on stdout or stderr, by version).
"$helm" push "$tmp/$name-$version.tgz" "oci://$registry/$prefix" "${plain[@]}" >"$tmp/push.log" 2>&1 \
  || { cat "$tmp/push.log" >&2; die "helm push of $name $version to oci://$registry/$prefix failed (above)"; }
cat "$tmp/push.log" >&2
digest=$(sed -n 's/^Digest:[[:space:]]*//p' "$tmp/push.log")
[[ $digest == sha256:* ]] || die "helm push printed no digest for $name $version"
echo "oci://$registry/$prefix/$name $version $digest"
