#!/usr/bin/env bash
# Re-copies crds/*.yaml (the single source) into the chart as templates, wrapped in the `crds.install`
# toggle and given the `crds.keep` resource-policy annotation. Run it after `python3 crds/generate.py`;
# the tooling tests fail when the copies drift from crds/.
set -euo pipefail
chart=$(cd "$(dirname "$0")" && pwd)
src="$chart/../../crds"
out="$chart/templates/crds"
mkdir -p "$out"
rm -f "$out"/*.yaml
crds=("$src"/*.yaml)
for f in "${crds[@]}"; do
  name=$(basename "$f")
  {
    echo "{{- /* Copied from crds/$name by sync-crds.sh: edit crds/, never this file. */ -}}"
    echo "{{- if .Values.crds.install }}"
    # Insert the annotations right under the top-level `metadata:`; everything else is verbatim.
    awk -v name="$name" '
      !done && /^metadata:$/ {
        print
        print "  annotations:"
        print "    pfslayout.io/source: crds/" name
        print "    {{- if .Values.crds.keep }}"
        print "    helm.sh/resource-policy: keep"
        print "    {{- end }}"
        done = 1
        next
      }
      /^#/ && !done { next }
      { print }
    ' "$f"
    echo "{{- end }}"
  } >"$out/$name"
done
echo "synced ${#crds[@]} CRDs into ${out#"$chart/"}" >&2
