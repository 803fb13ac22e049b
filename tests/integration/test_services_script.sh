#!/usr/bin/env bash
# scripts/services: a second start is a no-op, and a port taken by another
# program gives a clear message naming the port, without touching it.
set -euo pipefail
root=${REAPER_SOURCE_DIR:?}
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Starting what already runs succeeds and says so.
out=$("$root/scripts/services" start 2>&1) || fail "second start failed: $out"
grep -q "already running" <<<"$out" || fail "second start did not say 'already running': $out"

# 2. A port held by something else: a clear refusal naming the port.
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
trap 'kill $holder 2>/dev/null || true; rm -rf "$tmp"' EXIT
tmp=$(mktemp -d)
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
set +e
out=$(RP_RUN=$tmp RP_PG_PORT=$port "$root/scripts/services" start postgres 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] || fail "start on a busy port exited 0"
grep -q "port $port on 127.0.0.1 is in use" <<<"$out" || fail "unclear message: $out"
[ ! -e "$tmp/pg/data" ] || fail "it initialised a database anyway"

set +e
out=$(RP_RUN=$tmp RP_AMQP_PORT=$port "$root/scripts/services" start rabbitmq 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] || fail "rabbitmq start on a busy port exited 0"
grep -q "port $port on 127.0.0.1 is in use" <<<"$out" || fail "unclear message: $out"
echo "services script: ok"
