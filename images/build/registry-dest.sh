# What images/build.sh --push and charts/push.sh share about where they push: sourced, never run.
# shellcheck shell=bash

# registry_parse DEST DEFAULT_PREFIX: sets `registry` (host[:port]), `prefix` and `scheme` from
# REGISTRY[/PREFIX]; returns 1 when DEST is not of that form. Plain HTTP for a registry on loopback
# (127.0.0.1, localhost, [::1]) or with PFSLAYOUT_REGISTRY_INSECURE=1, HTTPS otherwise.
# shellcheck disable=SC2034  # registry, prefix and scheme are for the script that sources this file
registry_parse() {
  [[ $1 =~ ^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(:[0-9]+)?(/[a-z0-9]+([._/-][a-z0-9]+)*)?$ ]] || return 1
  registry=${1%%/*}
  prefix=$2
  [ "$registry" = "$1" ] || prefix=${1#*/}
  scheme=https
  case $registry in 127.0.0.1*|localhost*|\[::1\]*) scheme=http ;; esac
  if [ "${PFSLAYOUT_REGISTRY_INSECURE:-}" = 1 ]; then scheme=http; fi
}

# registry_answers: whether a registry answers at $scheme://$registry/v2/ (200, or 401 before a login);
# when none does, prints the line that says so.
registry_answers() {
  local code
  code=$(curl -sS -o /dev/null --max-time 10 -w '%{http_code}' "$scheme://$registry/v2/" 2>&1) || code=
  case $code in 200|401) return 0 ;; esac
  echo "no registry answers at $scheme://$registry/v2/ (${code:-no answer}): start it (e2e/harness/cluster.sh up starts the test cluster's) or name another"
  return 1
}
