#!/usr/bin/env bash
# Packages the chart and pushes it to an OCI registry, the way users install it
# (`helm install pfs-layout-operator oci://REGISTRY/PREFIX/pfs-layout-operator --version VERSION`):
#   charts/push.sh REGISTRY[/PREFIX] [VERSION] [CHART_DIR]
# PREFIX defaults to `charts`, VERSION to the chart's own (Chart.yaml), CHART_DIR to this checkout's chart
# (another one: an older release's, as the upgrade test pushes it). Prints one line,
# `oci://REGISTRY/PREFIX/pfs-layout-operator VERSION sha256:<digest>`; logs go to stderr.
# The registry is asked first (GET /v2/): one that does not answer fails in one line naming its URL.
# Plain HTTP for a registry on loopback (127.0.0.1, localhost, [::1]) or with PFSLAYOUT_REGISTRY_INSECURE=1,
# HTTPS otherwise (log in first with `helm registry login` where the registry needs it). Helm is $HELM,
# else the one on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

die() { printf 'charts/push.sh: %s\n' "$*" >&2; exit 2; }

case ${1:-} in
  -h|--help) sed -n '2,11p' "$0" | cut -c3-; exit 0 ;;
  '') die "usage: charts/push.sh REGISTRY[/PREFIX] [VERSION] [CHART_DIR]" ;;
esac
dest=$1 version=${2:-} chart=${3:-$here/pfs-layout-operator}
# shellcheck source=../images/build/registry-dest.sh
. "$here/../images/build/registry-dest.sh"
registry_parse "$dest" charts || die "'$dest' is not REGISTRY[/PREFIX] (e.g. 127.0.0.1:26414 or ghcr.io/you/charts)"
[ -f "$chart/Chart.yaml" ] || die "no Chart.yaml in '$chart': name the chart directory"
name=$(sed -n 's/^name:[[:space:]]*//p' "$chart/Chart.yaml" | tr -d '"')
[ -n "$version" ] || version=$(sed -n 's/^version:[[:space:]]*//p' "$chart/Chart.yaml" | tr -d '"')
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] \
  || die "version '$version' is not SemVer 2 (MAJOR.MINOR.PATCH[-PRERELEASE]): Helm refuses it"

plain=()
[ "$scheme" = http ] && plain=(--plain-http)
why=$(registry_answers) || die "$why"
helm=${HELM:-helm}
command -v "$helm" >/dev/null || die "helm is not installed (e2e/harness/cluster.sh build helm builds it; set HELM)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$helm" package "$chart" --version "$version" --destination "$tmp" >&2
# Helm prints the digest it pushed ("Digest: sha256:..."; on stdout or stderr, by version).
"$helm" push "$tmp/$name-$version.tgz" "oci://$registry/$prefix" "${plain[@]}" >"$tmp/push.log" 2>&1 \
  || { cat "$tmp/push.log" >&2; die "helm push of $name $version to oci://$registry/$prefix failed (above)"; }
cat "$tmp/push.log" >&2
digest=$(sed -n 's/^Digest:[[:space:]]*//p' "$tmp/push.log")
[[ $digest == sha256:* ]] || die "helm push printed no digest for $name $version"
echo "oci://$registry/$prefix/$name $version $digest"
