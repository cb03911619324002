#!/bin/sh
# Entrypoint of the MPI image (contract: docs/images.md, "MPI image").
# On the launcher (the MPI Operator sets K_MPI_JOB_ROLE=launcher) wait until the workers' names in the
# hostfile resolve: the headless Service's DNS records appear a little after the pods, and mpirun
# fails at once on a name that does not resolve yet. The wait is bounded; then the command runs anyway
# and reports its own error. Everything else is exec'd unchanged (workers: sshd -De ...).
# The hostfile is the one the MPI Operator names for the job's MPI: HYDRA_HOST_FILE (MPICH),
# OMPI_MCA_orte_default_hostfile (Open MPI), I_MPI_HYDRA_HOST_FILE (Intel MPI); all /etc/mpi/hostfile.
# An MPICH launcher also gets HYDRA_IFACE (unless the job sets it): Hydra's proxies connect back to
# mpiexec by the name in its control-port string, the launcher's hostname, whose DNS record appears only
# once the launcher is in the headless Service's endpoints — a proxy started before that fails with
# "unable to get host address" and mpiexec waits until the job's deadline. With an interface named,
# the string carries that interface's address, which needs no DNS (docs/operator.md, "Hydra and the
# launcher's DNS name").
set -eu

HOSTFILE=${HYDRA_HOST_FILE:-${OMPI_MCA_orte_default_hostfile:-${I_MPI_HYDRA_HOST_FILE:-/etc/mpi/hostfile}}}
TRIES=${PFSLAYOUT_DNS_WAIT_TRIES:-60}

wait_resolvable() {
  i=0
  while ! getent hosts "$1" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -ge "$TRIES" ]; then
      echo "mpi-entrypoint: $1 does not resolve after $TRIES tries, 1 s apart; starting anyway" >&2
      return 0
    fi
    sleep 1
  done
}

if [ "${K_MPI_JOB_ROLE:-}" = "launcher" ] && [ -r "$HOSTFILE" ]; then
  # MPICH/Intel lines are "host:slots", Open MPI lines "host slots=N" (comments after #).
  sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[:[:space:]].*//' -e '/^$/d' "$HOSTFILE" | while read -r host; do
    wait_resolvable "$host"
  done
fi

IFACE=${PFSLAYOUT_HYDRA_IFACE:-eth0}
if [ "${K_MPI_JOB_ROLE:-}" = "launcher" ] && [ -n "${HYDRA_HOST_FILE:-}" ] && [ -z "${HYDRA_IFACE:-}" ] &&
  [ -e "/sys/class/net/$IFACE" ]; then
  export HYDRA_IFACE="$IFACE"
fi

if [ "$#" -eq 0 ]; then
  set -- /usr/sbin/sshd -De -f /home/mpiuser/.sshd_config
fi
exec "$@"
