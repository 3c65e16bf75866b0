#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server for ragjudge's `postgres` test tier.
#
#   export RAGJUDGE_TEST_PG="$(.ci/postgres.sh start)"   # prints the URL only
#   pytest -m postgres ...
#   .ci/postgres.sh stop              # stops the server of $RAGJUDGE_TEST_PG, deletes its folder
#
#   eval "$(.ci/postgres.sh start --export)"   # alternatively: prints export lines
#
# `start` runs initdb into a new temporary folder (as the `postgres` user when run as root, since
# PostgreSQL refuses to run as root), listens on 127.0.0.1 only, on a free port, with a private
# socket folder, creates the database `ragjudge_test` and prints its SQLAlchemy URL
# (postgresql+psycopg://postgres@127.0.0.1:PORT/ragjudge_test). Progress and errors go to stderr.
# `stop [FOLDER|URL]` finds the server by the folder, else by the port of the URL (default
# $RAGJUDGE_TEST_PG_DIR, else $RAGJUDGE_TEST_PG).
#
# Settings: PG_BINDIR (default: the newest of /usr/lib/postgresql/15/bin, pg_config --bindir,
# the PATH), PG_FAST=1 turns fsync off (faster for tests; never for figures that claim
# durability).
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

find_bindir() {
    if [[ -n "${PG_BINDIR:-}" ]]; then echo "$PG_BINDIR"; return; fi
    for dir in /usr/lib/postgresql/15/bin /usr/pgsql-15/bin /opt/homebrew/opt/postgresql@15/bin \
               /usr/local/opt/postgresql@15/bin; do
        if [[ -x "$dir/initdb" ]]; then echo "$dir"; return; fi
    done
    if command -v pg_config >/dev/null 2>&1 && [[ -x "$(pg_config --bindir)/initdb" ]]; then
        pg_config --bindir; return
    fi
    if command -v initdb >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v initdb)")"; return; fi
    log "no PostgreSQL found (looked for initdb in /usr/lib/postgresql/15/bin, pg_config, PATH);"
    log "install PostgreSQL 15 or set PG_BINDIR."
    exit 2
}

free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

as_owner() {
    # Run a command as the server's owner: `postgres` when we are root, else ourselves.
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    local bindir port dir data
    bindir="$(find_bindir)"
    port="$(free_port)"
    dir="$(mktemp -d "${TMPDIR:-/tmp}/ragjudge-pg-$port.XXXXXX")"
    data="$dir/data"
    if [[ "$(id -u)" == 0 ]]; then
        if ! id postgres >/dev/null 2>&1; then
            log "running as root but there is no 'postgres' user to run the server as."; exit 2
        fi
        chown postgres "$dir"
    fi
    chmod 700 "$dir"
    log "initdb ($("$bindir/postgres" --version)) into $data"
    as_owner "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 2; }
    {
        echo "listen_addresses = '127.0.0.1'"
        echo "port = $port"
        echo "unix_socket_directories = '$dir'"
        echo "max_connections = 100"
        echo "shared_buffers = 64MB"
        if [[ "${PG_FAST:-0}" == 1 ]]; then
            echo "fsync = off"; echo "synchronous_commit = off"; echo "full_page_writes = off"
        fi
    } | as_owner tee -a "$data/postgresql.conf" >/dev/null
    as_owner "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 30 start >/dev/null \
        || { cat "$dir/server.log" >&2; exit 2; }
    as_owner "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE ragjudge_test" >/dev/null
    echo "$bindir" >"$dir/bindir"
    log "PostgreSQL listening on 127.0.0.1:$port (folder $dir)"
    local url="postgresql+psycopg://postgres@127.0.0.1:$port/ragjudge_test"
    if [[ "${1:-}" == --export ]]; then
        echo "export RAGJUDGE_TEST_PG=$url"
        echo "export RAGJUDGE_TEST_PG_DIR=$dir"
    else
        echo "$url"
    fi
}

stop() {
    local dir="${1:-${RAGJUDGE_TEST_PG_DIR:-}}"
    if [[ -z "$dir" || "$dir" == *://* ]]; then
        local url="${dir:-${RAGJUDGE_TEST_PG:-}}" port
        port="$(sed -nE 's#^.*@[^:/]+:([0-9]+)/.*$#\1#p' <<<"$url")"
        dir=""
        if [[ -n "$port" ]]; then
            dir="$(ls -d "${TMPDIR:-/tmp}"/ragjudge-pg-"$port".* 2>/dev/null | head -n 1 || true)"
        fi
    fi
    if [[ -z "$dir" || ! -d "$dir/data" ]]; then
        log "nothing to stop: give the folder that 'start' printed, or set RAGJUDGE_TEST_PG_DIR."
        exit 2
    fi
    local bindir
    bindir="$(cat "$dir/bindir" 2>/dev/null || find_bindir)"
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf -- "$dir"
    log "stopped and removed $dir"
}

case "${1:-}" in
    start) shift; start "${1:-}" ;;
    stop) shift; stop "${1:-}" ;;
    *) echo "usage: $0 start [--export] | stop [FOLDER|URL]" >&2; exit 2 ;;
esac
