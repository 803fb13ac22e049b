#!/usr/bin/env bash
# Issue #16: a kubelet injects, into every container of a namespace, the
# "service link" variables of every Service there; for a Service named
# reaper (or reaper-metrics) they all start with REAPER_. reaperd
# (--check-config, --migrate, the daemon, --healthcheck) and reaperctl take
# them in their stride, with the full set a kubelet would inject for both
# Services, while a misspelt key still exits 2. The daemon logs the ones it
# passed over once, at debug.
# Needs the private broker and database (scripts/test gives their env);
# REAPERD and REAPERCTL name the built binaries.
set -euo pipefail
: "${REAPERD:?}" "${REAPERCTL:?}" "${REAPER_STORE_DSN:?run under scripts/test}"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
pid=""
cleanup() {
    [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
    [ -z "$pid" ] || wait "$pid" 2>/dev/null || true
    psql "$REAPER_STORE_DSN" -qc "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE" \
        >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
schema=itest_links$$
trap cleanup EXIT

# What a kubelet sets for Service "reaper" (ClusterIP 10.96.12.34, port
# 9464 named http) and "reaper-metrics" (10.96.40.2, 9100 named metrics,
# 9101 unnamed-as-second "admin"): kubernetes pkg/kubelet/envvars.
links=()
svc() { # NAME IP PORT:PORTNAME... (the first port also gives <NAME>_PORT)
    local n=$1 ip=$2 first=1; shift 2
    links+=("${n}_SERVICE_HOST=$ip")
    for pp in "$@"; do
        local p=${pp%%:*} name=${pp#*:}
        if [ "$first" = 1 ]; then
            links+=("${n}_SERVICE_PORT=$p" "${n}_PORT=tcp://$ip:$p")
            first=0
        fi
        links+=("${n}_SERVICE_PORT_${name}=$p"
            "${n}_PORT_${p}_TCP=tcp://$ip:$p" "${n}_PORT_${p}_TCP_PROTO=tcp"
            "${n}_PORT_${p}_TCP_PORT=$p" "${n}_PORT_${p}_TCP_ADDR=$ip")
    done
}
svc REAPER 10.96.12.34 9464:HTTP
svc REAPER_METRICS 10.96.40.2 9100:METRICS 9101:ADMIN
[ "${#links[@]}" -eq 21 ] || fail "expected 21 service-link variables, made ${#links[@]}"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base=(REAPER_STORE_SCHEMA="$schema" REAPER_HTTP_LISTEN="127.0.0.1:$port"
    REAPER_BROKER_CONTROL_QUEUE="vibey.itest.links$$.control"
    REAPER_REAP_OWNED_QUEUE_PATTERN="^vibey\\.itest\\.links$$\\."
    REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN="^vibey\\.itest\\.links$$\\..*\\.dlq$")
run() { env "${base[@]}" "${links[@]}" "$@"; }

# --check-config: accepted, and the keys still read (the listen given).
out=$(run "$REAPERD" --check-config 2>&1) || fail "reaperd --check-config with service links: $out"
grep -q "listen: '127.0.0.1:$port'" <<<"$out" || grep -q "listen: 127.0.0.1:$port" <<<"$out" ||
    fail "--check-config did not show http.listen 127.0.0.1:$port: $out"
echo "ok   reaperd --check-config with ${#links[@]} service-link variables"

# ...while a misspelt key is still refused, exit 2, named.
rc=0; out=$(run REAPER_REAP_INTERVAL_SECOND=30 "$REAPERD" --check-config 2>&1) || rc=$?
[ "$rc" -eq 2 ] && grep -q "REAPER_REAP_INTERVAL_SECOND: unknown variable; did you mean REAPER_REAP_INTERVAL_SECONDS" <<<"$out" ||
    fail "a misspelt key among service links: exit $rc: $out"
rc=0; out=$(run REAPER_PORT=9100 "$REAPERD" --check-config 2>&1) || rc=$?
[ "$rc" -eq 2 ] && grep -q "REAPER_PORT: unknown variable" <<<"$out" ||
    fail "REAPER_PORT=9100 (not a service link's value): exit $rc: $out"
echo "ok   a misspelt key is still refused (exit 2)"

# --migrate (the chart's init container).
out=$(run "$REAPERD" --migrate 2>&1) || fail "reaperd --migrate with service links: $out"
n=$(psql "$REAPER_STORE_DSN" -Atc "SELECT count(*) FROM information_schema.tables WHERE table_schema = '$schema'")
[ "$n" -gt 0 ] || fail "--migrate made no table in $schema"
echo "ok   reaperd --migrate with service links ($n tables in $schema)"

# The daemon, at debug: ready, one debug line naming what it passed over.
env "${base[@]}" "${links[@]}" REAPER_LOG_LEVEL=debug REAPER_LOG_FORMAT=json "$REAPERD" 2> "$tmp/log" &
pid=$!
for _ in $(seq 150); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)
    [ "$code" = 200 ] && break
    kill -0 "$pid" 2>/dev/null || fail "reaperd exited: $(tail -n 5 "$tmp/log")"
    sleep 0.2
done
[ "$code" = 200 ] || fail "/readyz never 200 (last $code): $(tail -n 5 "$tmp/log")"
n=$(grep -c 'service links' "$tmp/log" || true)
[ "$n" -eq 1 ] || fail "expected one debug line about service links, got $n"
grep 'service links' "$tmp/log" | grep -q '"count":"21"' || fail "debug line: $(grep 'service links' "$tmp/log")"
grep 'service links' "$tmp/log" | grep -q 'REAPER_METRICS_PORT_9101_TCP_ADDR' || fail "debug line lacks names"
grep -q '10\.96\.' "$tmp/log" && fail "the log shows a service link's value"
echo "ok   reaperd ready with service links; one debug line: $(grep -o '"count":"[0-9]*"' "$tmp/log")"

# reaperctl status (kubectl exec ... reaperctl in the pod) and --healthcheck.
out=$(run "$REAPERCTL" --timeout 20 status 2>&1) || fail "reaperctl status with service links: $out"
echo "ok   reaperctl status with service links"
out=$(run "$REAPERD" --healthcheck 2>&1) || fail "reaperd --healthcheck: $out"
echo "ok   reaperd --healthcheck: $out"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
rc=0; out=$(run "$REAPERD" --healthcheck 2>&1) || rc=$?
[ "$rc" -eq 1 ] || fail "reaperd --healthcheck with reaperd stopped: exit $rc: $out"
echo "ok   reaperd --healthcheck fails once reaperd stopped: $out"
