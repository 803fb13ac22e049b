#!/usr/bin/env bash
# The image built and run for real (issue #16): podman builds the
# Dockerfile as it is (its FROM lines resolved by debian:12 and
# debian:12-slim made here from a debootstrap root: no registry is
# reachable), then runs it as a container against the private broker and
# database:
#   - reaperd --migrate from the image (as the chart's init container);
#   - the daemon, read-only root file system (--read-only), its reaper.yaml
#     mounted, the broker password a podman secret mounted as a file (never
#     in a URL), the database's a pgpass file the same way;
#   - /readyz turns 200; the image's HEALTHCHECK (podman healthcheck run)
#     passes at the port the mounted reaper.yaml names (no ENV in the image);
#   - `reaperctl status` inside the container (podman exec) answers;
#   - the process runs as a non-root user (10001), the root file system
#     refuses a write;
#   - the image size and the times are printed.
# Skipped (exit 77, with the reason) where podman cannot run. The base
# images and podman's layer cache are kept (podman's store): a rebuild of
# unchanged sources takes seconds, a changed source recompiles reaper
# inside (a few minutes on two cores).
set -euo pipefail
src=${REAPER_SOURCE_DIR:?REAPER_SOURCE_DIR must name the source tree}
source "$src/scripts/lib.sh"
source "$src/tests/deploy/podman_lib.sh"
: "${REAPER_STORE_DSN:?run under scripts/test (the env of the private services)}" "${PGPASSFILE:?}"
: "${REAPER_BROKER_PASSWORD_FILE:?}"
why=$(rp_podman_skip)
if [ -n "$why" ]; then
    echo "SKIP: podman cannot run here: $why"
    exit 77
fi
rp_podman_setup

failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }

t0=$SECONDS
rp_podman_bases
rp_podman_build "$src"
build_s=$((SECONDS - t0))

tag=reaper-it-$$
name=$tag
schema=itest_image$$
work=$(mktemp -d)
chmod 755 "$work"
cleanup() {
    podman rm -f -t 2 "$name" >/dev/null 2>&1 || true
    podman secret rm "$tag-broker" "$tag-pgpass" >/dev/null 2>&1 || true
    psql "$REAPER_STORE_DSN" -qc "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE" \
        >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# reaper.yaml as an operator would mount it: the services' addresses, this
# test's own schema, control queue and queue patterns, the password files
# where the secrets are mounted.
cat > "$work/reaper.yaml" <<YAML
broker:
  url: '$REAPER_BROKER_URL'
  management_url: '$REAPER_BROKER_MANAGEMENT_URL'
  password_file: /run/secrets/broker
  control_queue: vibey.itest.image$$.control
store:
  dsn: '$REAPER_STORE_DSN'
  schema: $schema
reap:
  owned_queue_pattern: '^vibey\.itest\.image$$\.'
  dead_letter_queue_pattern: '^vibey\.itest\.image$$\..*\.dlq$'
http:
  listen: '127.0.0.1:$port'
YAML
chmod 644 "$work/reaper.yaml"
podman secret create "$tag-broker" "$REAPER_BROKER_PASSWORD_FILE" >/dev/null
podman secret create "$tag-pgpass" "$PGPASSFILE" >/dev/null
# The environment scripts/services gives is left out on purpose: the
# configuration is the mounted file's (and PGPASSFILE, libpq's).
# A read-only root has no /run/secrets to put the files in: a tmpfs there
# (as a kubelet mounts a Secret volume on a directory of its own).
run_opts=(--read-only --user 10001:10001 --tmpfs /run/secrets:size=1m,mode=0755
    -v "$work/reaper.yaml:/etc/reaper/reaper.yaml:ro"
    --secret "$tag-broker,target=/run/secrets/broker,uid=10001,gid=10001,mode=0400"
    --secret "$tag-pgpass,target=/run/secrets/pgpass,uid=10001,gid=10001,mode=0400"
    -e PGPASSFILE=/run/secrets/pgpass)

# --- the image --------------------------------------------------------------
size=$(podman image inspect --format '{{.Size}}' "$RP_IMAGE")
user=$(podman image inspect --format '{{.Config.User}}' "$RP_IMAGE")
envs=$(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$RP_IMAGE")
[ "${user%%:*}" = 10001 ] && pass "image user $user" || fail "image user is '$user', not 10001"
grep -q '^REAPER_' <<<"$envs" && fail "the image sets configuration by ENV: $(grep '^REAPER_' <<<"$envs")" ||
    pass "the image sets no REAPER_* through ENV"
out=$(podman run --rm --no-healthcheck "$RP_IMAGE" --version 2>&1) && [[ $out == "reaperd "* ]] &&
    pass "podman run $RP_IMAGE --version: $out" || fail "--version: $out"

# --- --migrate, as the init container -----------------------------------------
t1=$SECONDS
if out=$(podman run --rm --no-healthcheck "${run_opts[@]}" "$RP_IMAGE" --config /etc/reaper/reaper.yaml --migrate 2>&1); then
    n=$(psql "$REAPER_STORE_DSN" -Atc "SELECT count(*) FROM information_schema.tables WHERE table_schema = '$schema'")
    [ "$n" -gt 0 ] && pass "reaperd --migrate in the container made $n tables in $schema" ||
        fail "--migrate exited 0 but $schema has no table"
else
    fail "reaperd --migrate in the container: $out"
fi

# --- the daemon -------------------------------------------------------------
# (podman logs that it cannot reach systemd to time the HEALTHCHECK: there
# is no systemd here; podman healthcheck run below runs it.)
t2=$(date +%s%N)
podman run -d --name "$name" "${run_opts[@]}" "$RP_IMAGE" --config /etc/reaper/reaper.yaml \
    >/dev/null 2>"$work/run.err" || { cat "$work/run.err" >&2; exit 1; }
code=000
deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
    code=$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)
    [ "$code" = 200 ] && break
    [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] || break
    sleep 0.1
done
ready_ms=$((($(date +%s%N) - t2) / 1000000))
if [ "$code" = 200 ]; then
    pass "/readyz 200 from the container ${ready_ms} ms after podman run"
else
    fail "/readyz never 200 (last $code); log: $(podman logs "$name" 2>&1 | tail -n 5)"
fi
if out=$(podman healthcheck run "$name" 2>&1); then
    pass "the image's HEALTHCHECK passes at the mounted reaper.yaml's port $port"
else
    fail "podman healthcheck run: $out"
fi
if out=$(podman exec "$name" reaperctl --config /etc/reaper/reaper.yaml --timeout 20 status 2>&1); then
    pass "reaperctl status inside the container: $(head -n 1 <<<"$out")"
else
    fail "podman exec reaperctl status: $out"
fi
uids=$(podman exec "$name" sh -c 'grep "^Uid:" /proc/1/status' | awk '{print $2, $3}')
[ "$uids" = "10001 10001" ] && pass "reaperd runs as uid 10001 (real, effective)" ||
    fail "reaperd's uids: '$uids'"
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$name")" = true ] &&
    out=$(podman exec -u 0 "$name" sh -c 'touch /usr/local/bin/x 2>&1; touch /x 2>&1' || true) &&
    [ "$(grep -c 'Read-only file system' <<<"$out")" = 2 ] &&
    pass "the root file system is read-only (even to root in the container)" ||
    fail "the root file system took a write: $out"
podman exec "$name" sh -c 'cat /run/secrets/broker >/dev/null' &&
    pass "the broker password is a file mounted from a podman secret" || fail "no /run/secrets/broker"
grep -q "$(cat "$REAPER_BROKER_PASSWORD_FILE")" < <(podman logs "$name" 2>&1) &&
    fail "the broker password shows in the log" || pass "the log holds no password"

# A HEALTHCHECK against a stopped HTTP side: stop the daemon, no container
# to ask; instead ask with a port nobody serves.
if podman exec "$name" env REAPER_HTTP_LISTEN=127.0.0.1:1 reaperd --healthcheck >/dev/null 2>&1; then
    fail "reaperd --healthcheck passed against a port nobody serves"
else
    pass "reaperd --healthcheck fails against a port nobody serves"
fi

podman stop -t 15 "$name" >/dev/null 2>&1
rc=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[ "$rc" = 0 ] && pass "SIGTERM: reaperd exited 0" || fail "reaperd exited $rc on SIGTERM"

printf 'image %s: %s bytes (%s MB); bases and build %d s; /readyz %d ms after podman run\n' \
    "$RP_IMAGE" "$size" "$((size / 1000000))" "$build_s" "$ready_ms"
if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed; build log $RP_PODMAN_DIR/build.log" >&2
    exit 1
fi
