#!/usr/bin/env bash
# The one test command: sets up a fresh Debian machine (packages, the Python env, and what the selected
# tiers need — OrangeFS and MPICH with ROMIO's pvfs2 driver, the C shim and probe, Helm, the Kubernetes
# binaries and the real node's images, each built once and cached under ~/.cache by version and content)
# and runs the tiers — unit, integration, orangefs, e2e, multinode, lab; a test's tier is its folder
# (e2e/testkit/pfstestkit/tiers.py) — in pytest-xdist workers.
# With the e2e tier and others, it runs two pytest sessions side by side: the other tiers as soon as their
# own builds are done (one worker per core), in the background — beside the Kubernetes build on a cold
# machine, at equal priority, and from the start of the e2e session at the lowest CPU and I/O priority
# (nice 19, ionice idle), so on a warm machine they run beside the e2e lanes taking what those leave;
# and the e2e lanes on the clusters (PFSLAYOUT_E2E_WORKERS, default 3: three lanes side by side, then the
# serial lane alone). At equal priority the two sessions were tried once (2026-11): the other tiers'
# compilers and mpirun starved the API server and ten e2e tests missed their deadlines; at the lowest
# priority they only take what the e2e lanes leave (docs/test-cluster.md).
# The e2e tier runs on two clusters, one after the other: first its tests marked `local_cluster` (they
# need the local control plane's own parts on this machine: its API server and etcd processes, the real
# node's directories and containers, kwok's pod Stages) on the local cluster, while kind and its node image
# are built beside them (lowest priority); then the local cluster is stopped, a kind cluster of one
# control plane and three workers comes up (docs/kind.md), the rest of the e2e tier and the multinode
# tier run on its workers in one session (their node-lost and `down` tests last, alone), and kind goes down.
# Extra arguments go to pytest: `-m unit` (a tier expression) or test paths run just those and build
# only what they need. An unknown tier or a missing path fails at once, before anything is installed.
# Sources of OrangeFS/IOR: upstream by default, or PFSLAYOUT_SOURCE_MIRROR (docs/images.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

step() { printf '\n==> %s (%s)\n' "$*" "$(date +%T)" >&2; }

# The arguments first: plain Python, nothing installed yet.
plan=$(PYTHONPATH="$root/e2e/testkit" python3 -m pfstestkit.tiers plan "$@") || exit 2
eval "$plan"   # TIERS, STEPS, OTHER_TIERS, LOCAL_E2E, KIND_E2E, REST
needs() { [[ " $STEPS " == *" $1 "* ]]; }
has_tier() { [[ " $TIERS " == *" $1 "* ]]; }
# a tier that runs without a cluster (the e2e tier runs on the local one and kind, multinode on kind)
has_others() { local t; for t in $TIERS; do case $t in e2e|multinode) ;; *) return 0 ;; esac; done; return 1; }

step "host packages"
e2e/harness/setup/host-packages.sh

step "python environment"
venv=$(e2e/harness/setup/python-env.sh)
export PATH="$venv/bin:$PATH"
# The venv is shared by every checkout on the machine (keyed by the pyproject.toml files) and its editable
# installs point at whichever checkout linked them last; this checkout's sources come first for this run
# and every process it starts.
export PYTHONPATH="$root/operator/src:$root/lab:$root/e2e/testkit${PYTHONPATH:+:$PYTHONPATH}"

work=$(mktemp -d "${TMPDIR:-/tmp}/pfslayout-test-all.XXXXXX")
# Bytecode written once per run, outside the checkout: where the environment sets PYTHONDONTWRITEBYTECODE
# (this project's CI image does), every Python process of the run — each local operator of the e2e tests,
# each `pfslayout` call, each pytest worker — otherwise compiled the package from source again, ≈ 0.5 s of
# CPU per start (an operator's imports: 2.8 s against 2.3 s).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=$work/pycache
build_pid='' other_pid='' kind_build_pid='' stop_cluster=0 stop_kind=0
# The two clusters, one after the other: the local control plane (the default state directory) and kind
# (a state directory of its own). Each is named explicitly: with a container engine the default is kind.
local_cluster() { PFSLAYOUT_E2E_MODE=local e2e/harness/cluster.sh "$@"; }
kind_env() { PFSLAYOUT_E2E_MODE=kind PFSLAYOUT_E2E_STATE="$root/e2e/.state-kind" "$@"; }
kind_cluster() { kind_env e2e/harness/cluster.sh "$@"; }
# shellcheck disable=SC2329  # run by the EXIT trap
finish() {
  [ -z "$build_pid" ] || kill "$build_pid" 2>/dev/null || true
  [ -z "$kind_build_pid" ] || kill "$kind_build_pid" 2>/dev/null || true
  [ -z "$other_pid" ] || kill -- "-$other_pid" 2>/dev/null || true
  if [ "$stop_cluster" = 1 ]; then step "test cluster down"; local_cluster down >/dev/null || true; fi
  if [ "$stop_kind" = 1 ]; then step "kind cluster down"; kind_cluster down >/dev/null || true; fi
  rm -rf "$work"
}
trap finish EXIT

if needs cluster; then
  # The longest cold build (the Kubernetes binaries, Helm, kwok, the MPI Operator, CoreDNS, the registry,
  # then the images, which wait for the OrangeFS and MPICH trees below through their build lock): in the
  # background, from the start. The tiers below that run Helm ask for it (step "Helm").
  step "The Kubernetes binaries, Helm and the real node's images, in the background (log: $work/cluster-build.log)"
  local_cluster build >"$work/cluster-build.log" 2>&1 &
  build_pid=$!
fi

if needs orangefs && [ -z "${ORANGEFS_PREFIX:-}" ]; then
  step "OrangeFS and MPICH (ROMIO ufs+pvfs2) from source"
  # Without any source (no mirror, upstream out of reach) the OrangeFS tier skips and says why; any
  # other failure fails here.
  log=$work/orangefs-build.log
  if ORANGEFS_PREFIX=$(images/build/host.sh orangefs 2>"$log"); then
    export ORANGEFS_PREFIX
  elif grep -q '^fetch-source: ' "$log"; then
    PFSLAYOUT_ORANGEFS_UNAVAILABLE=$(grep '^fetch-source: ' "$log" | tail -n 1)
    export PFSLAYOUT_ORANGEFS_UNAVAILABLE
    echo "OrangeFS tier will skip: $PFSLAYOUT_ORANGEFS_UNAVAILABLE" >&2
  else
    tail -n 40 "$log" >&2
    exit 1
  fi
fi
if needs orangefs && [ -n "${ORANGEFS_PREFIX:-}" ] && [ -z "${PFSLAYOUT_MPICH_PREFIX:-}" ]; then
  PFSLAYOUT_MPICH_PREFIX=$(images/build/host.sh mpich)
  export PFSLAYOUT_MPICH_PREFIX
fi

if needs shim; then
  step "C shim and probe (CMake, Open MPI and MPICH) + C unit tests"
  shim/build.sh --test
fi

if needs helm; then
  # Built by the background build above when there is one (this waits for that component only, built
  # after Kubernetes: the other tiers then start once the cluster build is well on), here otherwise.
  step "Helm"
  local_cluster build helm
fi

# pytest's exit 5 (no test selected) is no failure of a session whose filter selects nothing.
pytest_session() {
  local rc=0
  python -m pytest "$@" || rc=$?
  [ "$rc" = 5 ] && rc=0
  return "$rc"
}
cores=$(nproc)
# The slowest tests of each session, so the lanes' estimates (pfstestkit.lanes.MINUTES) can follow them.
durations=(--durations=25)
other_rc=0
if [ -n "$build_pid" ] && has_others; then
  step "pytest, the tiers without a cluster (${TIERS// /, } less e2e and multinode), in the background (log: $work/other-tiers.log)"
  # A process group of its own: the EXIT trap stops the whole session, and the e2e step lowers its priority.
  set -m
  pytest_session -n "$cores" --dist loadgroup "${durations[@]}" -m "$OTHER_TIERS" "${REST[@]}" \
    >"$work/other-tiers.log" 2>&1 &
  other_pid=$!
  set +m
fi

e2e_rc=0 kind_rc=0 cluster_ready=0
if [ -n "$build_pid" ]; then
  if ! wait "$build_pid"; then
    build_pid=
    if [ -n "$other_pid" ]; then  # their results still count: let them finish and show them
      wait "$other_pid" || true
      other_pid=
      cat "$work/other-tiers.log"
    fi
    tail -n 60 "$work/cluster-build.log" >&2
    echo "test-all: the cluster build failed (above)" >&2
    exit 1
  fi
  build_pid='' cluster_ready=1
fi
if needs kind; then
  # kind and its node image (cold: ~6 min, mostly Go and mmdebstrap) beside the local cluster's session, at
  # the lowest priority like the other tiers: the kind cluster comes after it.
  step "kind and its node image, in the background (log: $work/kind-build.log)"
  PFSLAYOUT_E2E_MODE=kind nice -n 19 ionice -c 3 e2e/harness/cluster.sh build >"$work/kind-build.log" 2>&1 &
  kind_build_pid=$!
fi
workers=${PFSLAYOUT_E2E_WORKERS:-3}
lower_others() {
  # Beside the builds the other tiers ran at equal priority; beside the e2e lanes they take only what
  # the lanes leave (what they start from now on inherits it). A cold run with them at the lowest
  # priority from the start left most of them for the e2e lanes, which stretched 19 -> 27 min.
  [ -n "$other_pid" ] || return 0
  renice -n 19 -g "$other_pid" >/dev/null 2>&1 || true
  ionice -c 3 -P "$other_pid" 2>/dev/null || true
}
# How many tests a tier expression selects (the local cluster is brought up only for some).
# A collection that fails stops the run here (it would fail the session anyway, but must not read as none).
selected() {
  local out rc=0
  out=$(python -m pytest --collect-only -q -p no:cacheprovider -m "$1" "${REST[@]}" 2>&1) || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then
    printf '%s\n' "$out" | tail -n 30 >&2
    echo "test-all: collecting -m '$1' failed (above)" >&2
    exit 1
  fi
  printf '%s\n' "$out" | grep -c '::' || true
}
local_tests=0
if [ "$cluster_ready" = 1 ] && has_tier e2e; then local_tests=$(selected "$LOCAL_E2E"); fi
if [ "$local_tests" -gt 0 ]; then
  step "test cluster up (local control plane)"
  # Brought up once for every worker (they join it; the last one out leaves it to us) and stopped when the
  # run ends, unless it was running before.
  if [ "$(local_cluster up)" = started ] && [ "${PFSLAYOUT_E2E_KEEP:-}" != 1 ]; then stop_cluster=1; fi
  # One scanner of the real node's containers for all workers; the hardening test reads its record here.
  export PFSLAYOUT_E2E_AUDIT_DIR=$work/audit
  lower_others
  step "pytest: the e2e tests that need the local cluster ($workers lane(s) at a time)"
  # Always with the tier expression: REST holds the paths and options, never the -m (a run of
  # `-m e2e --durations=0` once collected every tier here).
  PFSLAYOUT_E2E_MODE=local pytest_session -n "$workers" --dist loadgroup "${durations[@]}" -m "$LOCAL_E2E" \
    "${REST[@]}" || e2e_rc=$?
  unset PFSLAYOUT_E2E_AUDIT_DIR
elif [ -z "$other_pid" ] && has_others; then
  step "pytest: ${TIERS// /, }"
  # No cluster session: the tier expression narrows the session (REST never holds the -m: without it
  # here `-m unit` ran every tier, e2e included).
  pytest_session -n "$cores" --dist loadgroup "${durations[@]}" -m "$OTHER_TIERS" "${REST[@]}" || other_rc=$?
fi

kind_tests=0
if has_tier e2e || has_tier multinode; then kind_tests=$(selected "$KIND_E2E"); fi
if [ "$kind_tests" -gt 0 ]; then
  # One cluster at a time on the machine: the local one goes first.
  if [ "$stop_cluster" = 1 ]; then
    step "test cluster down"
    local_cluster down >/dev/null || true
    stop_cluster=0
    # Whatever it left behind would run beside every kind test: said here, where it happened.
    left=$(local_cluster leftovers 2>&1 || true)
    [ -z "$left" ] || printf 'test-all: the local cluster left behind:\n%s\n' "$left" >&2
  fi
  step "kind and its node image: waiting for their build"
  if ! wait "$kind_build_pid"; then
    kind_build_pid=
    tail -n 60 "$work/kind-build.log" >&2
    echo "test-all: the kind build failed (above)" >&2
    exit 1
  fi
  kind_build_pid=
  step "kind cluster up"
  if [ "$(kind_cluster up)" = started ] && [ "${PFSLAYOUT_E2E_KEEP:-}" != 1 ]; then stop_kind=1; fi
  lower_others
  step "pytest: the rest of the e2e tier and the multinode tier, on the kind cluster's workers ($workers lane(s) at a time)"
  # One session: the multinode tests join the lanes (the release lane), their node-lost and `down` tests
  # the serial lane at the end. The last session on kind: its test of `down` need not start it again.
  PFSLAYOUT_E2E_LAST_SESSION=1 kind_env pytest_session -n "$workers" --dist loadgroup "${durations[@]}" \
    -m "$KIND_E2E" "${REST[@]}" || kind_rc=$?
fi

if [ -n "$other_pid" ]; then
  wait "$other_pid" || other_rc=$?
  other_pid=
  step "pytest, the tiers without a cluster: their session's output"
  cat "$work/other-tiers.log"
fi

echo "test-all: e2e session exit $e2e_rc on the local cluster, e2e and multinode session exit $kind_rc on kind," \
  "other tiers' session exit $other_rc" >&2
[ "$e2e_rc" = 0 ] && [ "$kind_rc" = 0 ] && [ "$other_rc" = 0 ]
