# shellcheck shell=bash
# A throw-away PostgreSQL server for the tests of the store/postgres plugin.
#
# Source it from .ci/run before `go test`:
#
#     . .ci/postgres.sh      # starts the server, exports VIGIL_TEST_POSTGRES_DSN,
#                            # and stops it (and deletes its files) on EXIT
#
# It installs PostgreSQL from Debian's packages when `initdb` is missing,
# initialises a cluster in a temporary directory as an unprivileged user
# (`nobody` when run as root, else the current user), starts it on
# 127.0.0.1 at a free port with password authentication, creates a
# database and exports its DSN (and VIGIL_PG_DIR, the cluster's folder). pg_stat_statements is preloaded, for
# bench/load's statement counts (the tool creates the extension). The server listens on loopback only and its
# Unix socket lives in the temporary directory.
#
# The EXIT trap it registers replaces any earlier EXIT trap: a script that
# needs its own should call vigil_pg_stop from it. Set VIGIL_PG_NO_TRAP=1 to
# register none (then call vigil_pg_stop yourself).

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "usage: . $0   (source it; it exports VIGIL_TEST_POSTGRES_DSN)" >&2
  exit 2
fi

# vigil_pg_bindir prints the directory of initdb, installing PostgreSQL
# from Debian's packages when it is nowhere to be found.
vigil_pg_bindir() {
  local d
  if command -v initdb >/dev/null 2>&1; then
    # The real directory (PATH may hold a symlink), where psql and
    # postgres are too.
    dirname "$(readlink -f "$(command -v initdb)")"
    return
  fi
  # Debian keeps the server binaries out of PATH.
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
    echo "== installing postgresql (apt-get)" >&2
    if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
      # We make our own cluster: don't let the package create and start one.
      mkdir -p /etc/postgresql-common
      echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq -o Dpkg::Options::=--force-confold postgresql >&2
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
    echo "postgres.sh: no initdb after installing postgresql" >&2
    return 1
  fi
  echo "$d"
}

# vigil_pg_as runs a command as the cluster's owner.
vigil_pg_as() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$VIGIL_PG_USER" -- "$@"
  else
    "$@"
  fi
}

# vigil_pg_port_free reports whether nothing listens on 127.0.0.1:$1.
vigil_pg_port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

vigil_pg_start() {
  local bindir pw port tries
  bindir=$(vigil_pg_bindir) || return 1
  VIGIL_PG_BIN=$bindir
  VIGIL_PG_USER=$(id -un)
  [ "$(id -u)" = 0 ] && VIGIL_PG_USER=nobody
  VIGIL_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vigil-pg.XXXXXX")
  chmod 755 "$VIGIL_PG_DIR"
  pw=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  printf '%s\n' "$pw" >"$VIGIL_PG_DIR/pwfile"
  chown -R "$VIGIL_PG_USER" "$VIGIL_PG_DIR"
  vigil_pg_as "$bindir/initdb" -D "$VIGIL_PG_DIR/data" -U vigil --pwfile="$VIGIL_PG_DIR/pwfile" \
    --auth=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$VIGIL_PG_DIR/initdb.log" 2>&1 || {
    cat "$VIGIL_PG_DIR/initdb.log" >&2
    rm -rf "$VIGIL_PG_DIR"
    return 1
  }
  rm -f "$VIGIL_PG_DIR/pwfile"
  for tries in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    vigil_pg_port_free "$port" || continue
    if vigil_pg_as "$bindir/pg_ctl" -D "$VIGIL_PG_DIR/data" -l "$VIGIL_PG_DIR/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$VIGIL_PG_DIR -c max_connections=200 \
         -c shared_preload_libraries=pg_stat_statements -c track_io_timing=on" \
      start >/dev/null; then
      break
    fi
    port=
  done
  if [ -z "$port" ]; then
    echo "postgres.sh: the server did not start:" >&2
    cat "$VIGIL_PG_DIR/server.log" >&2
    rm -rf "$VIGIL_PG_DIR"
    return 1
  fi
  VIGIL_PG_PORT=$port
  if ! PGPASSWORD=$pw "$bindir/psql" -q -h 127.0.0.1 -p "$port" -U vigil -d postgres -v ON_ERROR_STOP=1 \
    -c 'CREATE DATABASE vigil_test' >/dev/null; then
    vigil_pg_stop
    return 1
  fi
  export VIGIL_TEST_POSTGRES_DSN="postgres://vigil:$pw@127.0.0.1:$port/vigil_test?sslmode=disable"
  # bench/load reads the cluster's folder from it to count PostgreSQL's CPU.
  export VIGIL_PG_DIR
  echo "== postgres $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $VIGIL_PG_DIR)"
}

vigil_pg_stop() {
  [ -n "${VIGIL_PG_DIR:-}" ] || return 0
  vigil_pg_as "$VIGIL_PG_BIN/pg_ctl" -D "$VIGIL_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$VIGIL_PG_DIR"
  unset VIGIL_PG_DIR VIGIL_TEST_POSTGRES_DSN
}

vigil_pg_start || return 1
if [ -z "${VIGIL_PG_NO_TRAP:-}" ]; then
  trap vigil_pg_stop EXIT
fi
