# Host processes of the test cluster, recorded by PID: sourced by local.sh and kind.sh, never run.
# The sourcing script sets PIDS (PID files), LOGS (one log per process) and UP_TIMEOUT (seconds).
# shellcheck shell=bash

# A PID file holds "<pid> <start time in clock ticks>": the start time tells our process from an
# unrelated one that later got the same PID, so `down` never signals a stranger.
# A zombie (exited, not yet reaped by its new parent) counts as gone.
proc_start() { awk '$3 != "Z" {print $22}' "/proc/$1/stat" 2>/dev/null; }
pid_of() { # prints the pid when the component's recorded process is still alive
  local f=$PIDS/$1.pid pid start
  [ -f "$f" ] || return 1
  read -r pid start < "$f" || return 1
  [ -n "$pid" ] && [ "$(proc_start "$pid")" = "$start" ] || return 1
  echo "$pid"
}

start() { # name binary args...: detached from the caller's session; stdio to the log
  local name=$1; shift
  mkdir -p "$PIDS" "$LOGS"
  # setsid: a Ctrl-C in the caller's terminal must not take the cluster down half way.
  # fds 8/9 are the up/down and build locks: a daemon inheriting one would hold it for its lifetime.
  setsid "$@" </dev/null >>"$LOGS/$name.log" 2>&1 8>&- 9>&- &  # >>: a restart keeps the earlier log
  local pid=$!
  echo "$pid $(proc_start "$pid")" > "$PIDS/$name.pid"
}

alive_or_die() {
  pid_of "$1" >/dev/null && return 0
  tail -n 25 "$LOGS/$1.log" >&2 || true
  die "$1 exited during start-up (log: $LOGS/$1.log)"
}

wait_for() { # description component-to-watch command...: polls every 0.25 s until UP_TIMEOUT
  local what=$1 comp=$2; shift 2
  local deadline=$((SECONDS + UP_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    [ -n "$comp" ] && alive_or_die "$comp"
    [ $SECONDS -lt $deadline ] || die "timed out after ${UP_TIMEOUT}s waiting for $what (logs: $LOGS)"
    sleep 0.25
  done
}

# Stops a group of components together: SIGTERM to all, then SIGKILL to whatever is left after 15 s
# (the state is throwaway). Each takes ~2 s to exit on its own.
stop_group() {
  local c pid deadline=$((SECONDS + 15)) pending
  for c in "$@"; do
    if pid=$(pid_of "$c"); then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  while :; do
    pending=0
    for c in "$@"; do pid_of "$c" >/dev/null && pending=1; done
    if [ $pending -eq 0 ] || [ $SECONDS -ge $deadline ]; then break; fi
    sleep 0.1
  done
  for c in "$@"; do
    if pid=$(pid_of "$c"); then
      log "$c (pid $pid) ignored SIGTERM for 15 s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  sleep 0.2
  for c in "$@"; do pid_of "$c" >/dev/null || rm -f "$PIDS/$c.pid"; done
}

