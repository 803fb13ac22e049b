#!/usr/bin/env bash
# scripts/services: a second start is a no-op; the broker the environment
# points at is the version RP_BROKER_VERSION says (3.10 or 4.0), with the
# event exchange; and a port taken by another program gives a clear message
# naming the port, without touching it (nor building anything).
set -euo pipefail
root=${REAPER_SOURCE_DIR:?}
version=${RP_BROKER_VERSION:?set by scripts/test (scripts/services env)}
fail() { echo "FAIL: $*" >&2; exit 1; }
case "$version" in
    3.10) service=all ;;          # postgres + rabbitmq
    4.0) service=rabbitmq4 ;;
    *) fail "unknown RP_BROKER_VERSION '$version'" ;;
esac
amqp_port=${REAPER_BROKER_URL##*:}; amqp_port=${amqp_port%%/*}
listener() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1; }
mgmt() { # PATH: GET from the management API of the broker under test
    printf 'user = "reaper:%s"\n' "$(cat "$REAPER_BROKER_PASSWORD_FILE")" |
        curl -sf -K - "$REAPER_BROKER_MANAGEMENT_URL$1"
}
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }

# 1. Starting what already runs succeeds, says so, and leaves the same
#    broker process listening.
before=$(listener "$amqp_port")
[ -n "$before" ] || fail "nothing listens on the broker's port $amqp_port"
out=$("$root/scripts/services" start "$service" 2>&1) || fail "second start $service failed: $out"
grep -q "already running" <<<"$out" || fail "second start $service did not say 'already running': $out"
[ "$(listener "$amqp_port")" = "$before" ] || fail "second start $service replaced the broker ($before)"

# 2. The broker under test is the one RP_BROKER_VERSION names, with the
#    event exchange.
overview=$(mgmt /api/overview) || fail "no /api/overview at $REAPER_BROKER_MANAGEMENT_URL"
got=$(json '["rabbitmq_version"]' <<<"$overview")
case "$got" in "$version".*) ;; *) fail "RP_BROKER_VERSION=$version but the broker is RabbitMQ $got" ;; esac
exchange=$(mgmt /api/exchanges/%2f/amq.rabbitmq.event) || fail "no amq.rabbitmq.event on RabbitMQ $got"
[ "$(json '["type"]' <<<"$exchange")" = topic ] || fail "amq.rabbitmq.event is not a topic exchange: $exchange"
echo "RabbitMQ $got (node $(json '["node"]' <<<"$overview")) with the event exchange"

# 3. A port held by something else: a clear refusal naming the port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $port)); s.listen(64); s.settimeout(1)
end = time.time() + 30
while time.time() < end:
    try: s.accept()[0].close()
    except OSError: pass" &
holder=$!
tmp=$(mktemp -d)
trap 'kill $holder 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
refused() { # WHAT VAR: start WHAT in an empty .run with VAR=$port must fail naming the port
    local out rc
    set +e
    out=$(env RP_RUN="$tmp" RP_TRIXIE="$tmp/trixie" "$2=$port" "$root/scripts/services" start "$1" 2>&1); rc=$?
    set -e
    [ "$rc" -ne 0 ] || fail "$1 start on a busy port exited 0"
    grep -q "port $port on 127.0.0.1 is in use" <<<"$out" || fail "unclear message from $1: $out"
}
refused postgres RP_PG_PORT
[ ! -e "$tmp/pg/data" ] || fail "it initialised a database anyway"
refused rabbitmq RP_AMQP_PORT
refused rabbitmq4 RP_AMQP4_PORT
[ ! -e "$tmp/trixie" ] || fail "it built a trixie root anyway"
echo "services script: ok"
