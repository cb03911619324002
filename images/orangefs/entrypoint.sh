#!/bin/sh
# Entrypoint of the OrangeFS image (contract: docs/images.md, "OrangeFS image").
#
#   server       create this server's storage if it is absent, then run pvfs2-server in the foreground
#   init         only the storage step (for an init container), then exit
#   <anything>   exec it unchanged (pvfs2-server ..., pvfs2-ping ..., sh -c ...), so a pod's `args`
#                or `command` work as if there were no entrypoint
#
# The alias is ORANGEFS_ALIAS, else POD_NAME (a StatefulSet pod's name), else the short hostname.
# The storage paths are read from the config itself (the alias' <ServerOptions>, else <Defaults>), so
# the config stays the single source of truth for where a server keeps its data.
set -eu

CONF=${ORANGEFS_CONF:-/etc/orangefs/fs.conf}

die() { echo "orangefs-entrypoint: $*" >&2; exit 2; }

alias_name() {
  if [ -n "${ORANGEFS_ALIAS:-}" ]; then echo "$ORANGEFS_ALIAS"
  elif [ -n "${POD_NAME:-}" ]; then echo "$POD_NAME"
  else hostname -s 2>/dev/null || hostname
  fi
}

# conf_value KEY ALIAS: the server's own value of KEY, else the <Defaults> one, else nothing.
conf_value() {
  awk -v key="$1" -v alias="$2" '
    /^[ \t]*<Defaults>/        { sect = "d"; next }
    /^[ \t]*<\/Defaults>/      { sect = ""; next }
    /^[ \t]*<ServerOptions>/   { sect = "s"; srv = ""; val = ""; next }
    /^[ \t]*<\/ServerOptions>/ { if (srv == alias && val != "") own = val; sect = ""; next }
    sect == "d" && $1 == key   { def = $2 }
    sect == "s" && $1 == "Server" { srv = $2 }
    sect == "s" && $1 == key   { val = $2 }
    END { if (own != "") print own; else if (def != "") print def }
  ' "$CONF"
}

check_conf() {
  [ -r "$CONF" ] || die "config $CONF is missing or unreadable (mount fs.conf there or set ORANGEFS_CONF)"
  grep -Eq "^[[:space:]]*Alias[[:space:]]+$1[[:space:]]" "$CONF" \
    || die "alias '$1' has no 'Alias' line in $CONF (set ORANGEFS_ALIAS to one of its aliases)"
}

# pvfs2-server -f refuses to touch existing storage ("already exists; aborting!"), so a restarted pod
# must skip it. Trove creates collections.db in the metadata space during -f (a directory with LMDB).
init_storage() {
  alias=$1
  meta=$(conf_value MetadataStorageSpace "$alias")
  data=$(conf_value DataStorageSpace "$alias")
  [ -n "$meta" ] || die "no MetadataStorageSpace for '$alias' in $CONF"
  [ -n "$data" ] || die "no DataStorageSpace for '$alias' in $CONF"
  mkdir -p "$meta" "$data"
  if [ -e "$meta/collections.db" ]; then
    echo "orangefs-entrypoint: storage for $alias exists in $meta; not recreating it"
  else
    echo "orangefs-entrypoint: creating storage for $alias in $meta and $data"
    pvfs2-server -f -a "$alias" "$CONF"
  fi
}

case "${1:-server}" in
  server)
    a=$(alias_name); check_conf "$a"; init_storage "$a"
    exec pvfs2-server -d -a "$a" "$CONF" ;;
  init)
    a=$(alias_name); check_conf "$a"; init_storage "$a" ;;
  *)
    exec "$@" ;;
esac
