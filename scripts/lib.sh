# Shared settings and helpers for the scripts in this folder. Sourced, not run.
# Everything private lives under $RP_RUN (ignored by git): service data, logs,
# generated secrets, pid files.

RP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RP_RUN=${RP_RUN:-$RP_ROOT/.run}
RP_BUILD=${RP_BUILD:-$RP_ROOT/build}

# Private loopback ports, away from the well-known ones so that a system
# broker or database on the same machine is never touched, and below Linux's
# ephemeral range (32768-60999, net.ipv4.ip_local_port_range) with every port
# derived from them (TLS, the clusters' +20..+33), so that a client's outgoing
# connection can never hold one of them when a service starts (EADDRINUSE).
RP_PG_PORT=${RP_PG_PORT:-24329}
# The streaming standby of that database (scripts/services start pgstandby),
# for the failover tests: the port after the primary's (the env files of a
# shared machine space their RP_PG_PORT values 100 apart).
RP_PG2_PORT=${RP_PG2_PORT:-$((RP_PG_PORT + 1))}
RP_AMQP_PORT=${RP_AMQP_PORT:-22729}
RP_MGMT_PORT=${RP_MGMT_PORT:-15679}
RP_DIST_PORT=${RP_DIST_PORT:-25679}
RP_EPMD_PORT=${RP_EPMD_PORT:-23699}
RP_RABBIT_NODE=${RP_RABBIT_NODE:-reaper-dev@localhost}

# The second broker, RabbitMQ 4.0 (Debian 13 "trixie"), runs chrooted in a
# debootstrap root under .run/ (service "rabbitmq4"), so that the tests run
# against both versions on one Debian 12 machine. Its own ports, node and
# Erlang port mapper, so the two never meet.
RP_AMQP4_PORT=${RP_AMQP4_PORT:-22740}
RP_MGMT4_PORT=${RP_MGMT4_PORT:-15680}
RP_DIST4_PORT=${RP_DIST4_PORT:-25680}
RP_EPMD4_PORT=${RP_EPMD4_PORT:-23700}
RP_RABBIT4_NODE=${RP_RABBIT4_NODE:-reaper-dev4@localhost}
# Each broker also listens for AMQP over TLS (the tests of broker.tls.*),
# 20000 below its AMQP port, with a certificate for localhost and 127.0.0.1
# from a private CA made once in $RP_RUN/tls (rp_tls_ensure).
RP_AMQPS_PORT=${RP_AMQPS_PORT:-$((RP_AMQP_PORT - 20000))}
RP_AMQPS4_PORT=${RP_AMQPS4_PORT:-$((RP_AMQP4_PORT - 20000))}
RP_TRIXIE=$(realpath -m "${RP_TRIXIE:-$RP_RUN/trixie}")
RP_DEBIAN_MIRROR=${RP_DEBIAN_MIRROR:-http://deb.debian.org/debian}

RP_PG_BIN=${RP_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}

rp_log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
rp_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# rp_port_busy PORT: true when something listens on 127.0.0.1:PORT.
rp_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# rp_port_owner PORT: a short description of who listens on PORT.
rp_port_owner() {
    ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*users:((\("[^"]*",pid=[0-9]*\).*/\1/p' | head -n 1
}

# rp_port_pids PORT: the processes listening on PORT (any address).
rp_port_pids() {
    ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u
}

# rp_proc_alive PID: true while PID runs. A zombie counts as gone: the
# machine's init may take a minute to reap an orphan.
rp_proc_alive() {
    kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# rp_pid_alive FILE: true when FILE names a running process.
rp_pid_alive() { [ -s "$1" ] && rp_proc_alive "$(head -n 1 "$1")"; }

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

# rp_mgmt_get PORT SECRET_FILE PATH: GET from a broker's management API as
# reaper (the password goes to curl on stdin, not on its command line).
rp_mgmt_get() {
    printf 'user = "reaper:%s"\n' "$(cat "$2")" |
        curl -sf -K - "http://127.0.0.1:$1$3"
}

# The environment reaperd and the tests use to reach the private services.
# No secret is written into a config file: the broker password comes from a
# file and the database password from a libpq passfile.
#   rp_service_env [rabbitmq|rabbitmq4|cluster]   the broker: 3.10 (default),
#                  4.0, or the 3-node 3.10 cluster (a host list in each URL)
# RP_BROKER_VERSION (3.10 or 4.0) lets a test say what each broker does;
# RP_BROKER_SERVICE is the name scripts/services knows that broker by
# (e.g. `scripts/services restart "$RP_BROKER_SERVICE"` in a failure test).
# RP_BROKER_TLS_URL and RP_TLS_CA_FILE: the same broker over TLS, and the CA
# that signed its certificate (for tests; reaperd reads REAPER_* only).
RP_SERVICE_ENV_VARS=(REAPER_BROKER_URL REAPER_BROKER_MANAGEMENT_URL REAPER_BROKER_PASSWORD_FILE
    REAPER_STORE_DSN PGPASSFILE RP_PG_ADMIN_DSN RP_BROKER_VERSION RP_BROKER_SERVICE
    RP_BROKER_TLS_URL RP_TLS_CA_FILE RP_STORE_STANDBY_DSN RP_STORE_FAILOVER_DSN)
rp_service_env() {
    local amqp=$RP_AMQP_PORT mgmt=$RP_MGMT_PORT secret=broker version=3.10 service=rabbitmq
    local amqps=$RP_AMQPS_PORT
    case "${1:-rabbitmq}" in
        rabbitmq) ;;
        rabbitmq4) amqp=$RP_AMQP4_PORT mgmt=$RP_MGMT4_PORT secret=broker4 version=4.0 service=rabbitmq4
            amqps=$RP_AMQPS4_PORT ;;
        cluster) service=cluster ;;
        cluster4) service=cluster4 secret=broker4 version=4.0 ;;
        *) rp_die "rp_service_env: unknown broker '$1' (rabbitmq, rabbitmq4, cluster or cluster4)" ;;
    esac
    export REAPER_BROKER_URL="amqp://reaper@127.0.0.1:$amqp/%2f"
    export REAPER_BROKER_MANAGEMENT_URL="http://127.0.0.1:$mgmt"
    if [ "$service" = cluster ] || [ "$service" = cluster4 ]; then
        # The three nodes of scripts/services' cluster (or cluster4), as one host list.
        local a=$((RP_AMQP_PORT + 20)) m=$((RP_MGMT_PORT + 20))
        [ "$service" = cluster4 ] && a=$((RP_AMQP4_PORT + 30)) m=$((RP_MGMT4_PORT + 30))
        export REAPER_BROKER_URL="amqp://reaper@127.0.0.1:$a,127.0.0.1:$((a + 1)),127.0.0.1:$((a + 2))/%2f"
        export REAPER_BROKER_MANAGEMENT_URL="http://127.0.0.1:$m,127.0.0.1:$((m + 1)),127.0.0.1:$((m + 2))"
    fi
    export REAPER_BROKER_PASSWORD_FILE="$RP_RUN/secrets/$secret"
    export REAPER_STORE_DSN="host=127.0.0.1 port=$RP_PG_PORT dbname=vibey user=reaper"
    export PGPASSFILE="$RP_RUN/secrets/pgpass"
    export RP_PG_ADMIN_DSN="host=$RP_RUN/pg/sock port=$RP_PG_PORT dbname=postgres user=postgres"
    # The standby alone, and both servers as one multi-host DSN that only a
    # primary satisfies (the primary first: after a failover every connect
    # is refused there before it reaches the promoted standby; the failover
    # test).
    export RP_STORE_STANDBY_DSN="host=127.0.0.1 port=$RP_PG2_PORT dbname=vibey user=reaper"
    export RP_STORE_FAILOVER_DSN="host=127.0.0.1,127.0.0.1 port=$RP_PG_PORT,$RP_PG2_PORT dbname=vibey user=reaper target_session_attrs=read-write"
    export RP_BROKER_VERSION=$version
    export RP_BROKER_SERVICE=$service
    export RP_BROKER_TLS_URL="amqps://reaper@localhost:$amqps/%2f"
    export RP_TLS_CA_FILE="$RP_RUN/tls/ca.pem"
}

# rp_tls_ensure: a private CA and a server certificate it signed (for
# localhost and 127.0.0.1, 10 years) in $RP_RUN/tls, made once: ca.pem,
# server.pem, server.key. Also other-ca.pem, a CA that signed nothing here
# (what a wrong trust anchor looks like).
rp_tls_ensure() {
    local d=$RP_RUN/tls
    [ -s "$d/server.pem" ] && [ -s "$d/other-ca.pem" ] && return 0
    command -v openssl >/dev/null || rp_die "openssl is not installed: run scripts/install-deps"
    mkdir -p "$d"
    (
        umask 077
        cd "$d"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=reaper test CA" \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=reaper other CA" \
            -keyout other-ca.key -out other-ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key \
            -out server.csr 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
            -extfile server.ext -out server.pem 2>/dev/null
        rm -f server.csr server.ext ca.srl
        chmod 644 ca.pem other-ca.pem server.pem
    ) || rp_die "could not make the test certificates in $d"
}
