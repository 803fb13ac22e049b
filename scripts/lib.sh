# Shared settings and helpers for the scripts in this folder. Sourced, not run.
# Everything private lives under $RP_RUN (ignored by git): service data, logs,
# generated secrets, pid files.

RP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RP_RUN=${RP_RUN:-$RP_ROOT/.run}
RP_BUILD=${RP_BUILD:-$RP_ROOT/build}

# Private loopback ports, away from the well-known ones so that a system
# broker or database on the same machine is never touched.
RP_PG_PORT=${RP_PG_PORT:-54329}
RP_AMQP_PORT=${RP_AMQP_PORT:-56729}
RP_MGMT_PORT=${RP_MGMT_PORT:-15679}
RP_DIST_PORT=${RP_DIST_PORT:-25679}
RP_EPMD_PORT=${RP_EPMD_PORT:-43699}
RP_RABBIT_NODE=${RP_RABBIT_NODE:-reaper-dev@localhost}

RP_PG_BIN=${RP_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}

rp_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
rp_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# rp_port_busy PORT: true when something listens on 127.0.0.1:PORT.
rp_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# rp_port_owner PORT: a short description of who listens on PORT.
rp_port_owner() {
    ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*users:((\("[^"]*",pid=[0-9]*\).*/\1/p' | head -n 1
}

# rp_pid_alive FILE: true when FILE names a running process.
rp_pid_alive() { [ -s "$1" ] && kill -0 "$(head -n 1 "$1")" 2>/dev/null; }

# rp_wait SECONDS WHAT CMD...: retry CMD every 0.5 s until it succeeds.
rp_wait() {
    local secs=$1 what=$2; shift 2
    local tries=$((secs * 2))
    while ! "$@" >/dev/null 2>&1; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || return 1
        sleep 0.5
    done
}

# The environment reaperd and the tests use to reach the private services.
# No secret is written into a config file: the broker password comes from a
# file and the database password from a libpq passfile.
rp_service_env() {
    export REAPER_BROKER_URL="amqp://reaper@127.0.0.1:$RP_AMQP_PORT/%2f"
    export REAPER_BROKER_MANAGEMENT_URL="http://127.0.0.1:$RP_MGMT_PORT"
    export REAPER_BROKER_PASSWORD_FILE="$RP_RUN/secrets/broker"
    export REAPER_STORE_DSN="host=127.0.0.1 port=$RP_PG_PORT dbname=vibey user=reaper"
    export PGPASSFILE="$RP_RUN/secrets/pgpass"
    export RP_PG_ADMIN_DSN="host=$RP_RUN/pg/sock port=$RP_PG_PORT dbname=postgres user=postgres"
}
