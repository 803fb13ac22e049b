#!/usr/bin/env bash
# The chart's pod started as a kubelet would (issue #16): the chart rendered
# by helmrender (Go text/template + Sprig: there is no helm here) with
# config.http.listen ":9100" and replicaCount 2, its Deployment's pod
# template played by `podman kube play` (chart_pod.py: the ConfigMap, the
# Secrets as a file and as env, the init container running --migrate, the
# probes' port, the securityContext and resources as rendered) PLUS, in
# every container, the service-link variables a kubelet injects for every
# rendered Service (REAPER_SERVICE_HOST, REAPER_PORT_9100_TCP_ADDR...),
# although the chart turns them off. For each of the two replicas, one
# after the other (both would publish the same port on this one machine):
#   - the pod becomes ready: GET /readyz 200 at the port the readiness
#     probe names, published from the pod (so the probe's port is the one
#     reaperd listens on); the time from `podman kube play` is printed;
#   - the init container exited 0 and its log says the schema was migrated
#     (the first replica) or already current (the second), and the tables
#     are in the schema, which did not exist before;
#   - reaperd runs as uid 10001 on a read-only root, no capabilities;
#   - `reaperctl status` in the pod (podman exec, the pod's env with the
#     service links) answers.
# The pod reaches the private broker and database through slirp4netns's
# 10.0.2.2 (the machine's loopback), so the chart is given those addresses.
# Skipped (exit 77, with the reason) where podman cannot run.
set -euo pipefail
src=${REAPER_SOURCE_DIR:?REAPER_SOURCE_DIR must name the source tree}
source "$src/scripts/lib.sh"
source "$src/tests/deploy/podman_lib.sh"
: "${REAPER_STORE_DSN:?run under scripts/test (the env of the private services)}" "${PGPASSFILE:?}"
: "${REAPER_BROKER_PASSWORD_FILE:?}" "${REAPER_BROKER_URL:?}" "${REAPER_BROKER_MANAGEMENT_URL:?}"
why=$(rp_podman_skip)
[ -n "$why" ] || command -v catatonit >/dev/null || why="catatonit (podman's pod pause) is not installed: run scripts/install-deps"
[ -n "$why" ] || command -v slirp4netns >/dev/null || why="slirp4netns is not installed: run scripts/install-deps"
command -v go >/dev/null || why="go is not installed: run scripts/install-deps"
if [ -n "$why" ]; then
    echo "SKIP: podman cannot run the chart's pod here: $why"
    exit 77
fi
rp_podman_setup
py=${PYTHON3:-python3}

failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }

t0=$SECONDS
rp_podman_bases
rp_podman_build "$src"
build_s=$((SECONDS - t0))

# --- helmrender (as test_chart_render.sh builds it) ---------------------------------
work=$(mktemp -d)
gocode=/usr/share/gocode
gopath=$work/gopath
mkdir -p "$gopath/src/helmrender" "$gopath/src/github.com/Masterminds/sprig" "$gopath/src/github.com/Masterminds/semver"
ln -sfn "$gocode/src/github.com/Masterminds/sprig" "$gopath/src/github.com/Masterminds/sprig/v3"
ln -sfn "$gocode/src/github.com/Masterminds/semver" "$gopath/src/github.com/Masterminds/semver/v3"
cp "$src/tests/deploy/helmrender/main.go" "$gopath/src/helmrender/main.go"
(cd "$gopath/src/helmrender" &&
    GO111MODULE=off GOPATH="$gopath:$gocode" GOCACHE="$RP_PODMAN_DIR/gocache" GOFLAGS= \
    go build -o "$work/helmrender" .)

tag=it$$
schema=itest_pod$$
pods=()
vols=()
cleanup() {
    for p in "${pods[@]}"; do podman pod rm -f -t 2 "$p" >/dev/null 2>&1 || true; done
    for v in "${vols[@]}"; do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
    podman secret rm "reaper-$tag-broker" "reaper-$tag-store" >/dev/null 2>&1 || true
    psql "$REAPER_STORE_DSN" -qc "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE" \
        >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The pod's port: 9100 as the issue asks, unless something here holds it.
port=9100
if rp_port_busy "$port" || [ -n "$(rp_port_pids "$port")" ]; then
    port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0",0)); print(s.getsockname()[1])')
    echo "note: port 9100 is taken on this machine: the pod listens on :$port instead"
fi
# The private services as the pod sees them (slirp4netns: 10.0.2.2 is the
# machine's loopback).
hostify() { sed 's/127\.0\.0\.1/10.0.2.2/; s/localhost/10.0.2.2/'; }
cat > "$work/values.yaml" <<YAML
replicaCount: 2
image: {repository: localhost/reaper, tag: deploy-test, pullPolicy: Never}
secrets:
  # The key is the file name the chart mounts it as (podman 4.3 ignores a
  # Secret volume's items and names each file after its key).
  broker: {existingSecret: reaper-$tag-broker, key: broker-password}
  store: {existingSecret: reaper-$tag-store, key: password}
config:
  broker:
    url: '$(hostify <<<"$REAPER_BROKER_URL")'
    management_url: '$(hostify <<<"$REAPER_BROKER_MANAGEMENT_URL")'
    control_queue: vibey.itest.pod$$.control
  store:
    dsn: '$(hostify <<<"$REAPER_STORE_DSN")'
    schema: $schema
  reap:
    owned_queue_pattern: '^vibey\.itest\.pod$$\.'
    dead_letter_queue_pattern: '^vibey\.itest\.pod$$\..*\.dlq$'
  http:
    listen: ":$port"
YAML
"$work/helmrender" -f "$work/values.yaml" -name reaper -namespace vibey "$src/helm/reaper" > "$work/rendered.yaml" ||
    rp_die "helmrender failed"
replicas=$("$py" -c 'import sys, yaml; print([d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"][0]["spec"]["replicas"])' "$work/rendered.yaml")
[ "$replicas" = 2 ] && pass "rendered: replicas 2" || fail "rendered replicas: $replicas"

# The Secrets, as podman 4.3 reads them. A Secret volume's: a Kubernetes
# Secret stored as a podman secret; podman 4.3 writes each data value into
# its file as it stands in the stored YAML (not base64-decoded), so the
# secret is stored with the password itself as the value (podman kube play
# of a Secret would store it base64-encoded, and the file would hold that).
# An env secretKeyRef's: podman's JSON of the data, base64 values.
pg_password=$(awk -F: '{print $5}' "$PGPASSFILE" | head -n 1)
"$py" - "$REAPER_BROKER_PASSWORD_FILE" "reaper-$tag-broker" > "$work/secret.yaml" <<'PY'
import sys, yaml
pw = open(sys.argv[1]).read().rstrip("\n")
print(yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": sys.argv[2]},
                      "type": "Opaque", "data": {"broker-password": pw}}), end="")
PY
podman secret create "reaper-$tag-broker" "$work/secret.yaml" >/dev/null
rm -f "$work/secret.yaml"
printf '{"password":"%s"}' "$(printf %s "$pg_password" | base64 -w0)" |
    podman secret create "reaper-$tag-store" - >/dev/null

[ "$(psql "$REAPER_STORE_DSN" -Atc "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '$schema'")" = 0 ] ||
    rp_die "schema $schema exists before the pod"

times=()
for i in 0 1; do
    pod=reaper-$tag-$i
    mapfile -t facts < <("$py" "$src/tests/deploy/chart_pod.py" "$work/rendered.yaml" "$work" "$pod")
    probe_port=${facts[0]} container_port=${facts[1]} nlinks=${facts[2]}
    read -r -a vols <<<"${facts[3]}"
    pods+=("$pod")
    [ "$probe_port" = "$port" ] && [ "$container_port" = "$port" ] &&
        pass "replica $i: the probes and containerPort name $port, the port of config.http.listen" ||
        fail "replica $i: probe port $probe_port, containerPort $container_port, listen :$port"
    start=$(date +%s%N)
    if ! out=$(podman kube play --network slirp4netns:allow_host_loopback=true "$work/pod.yaml" 2>&1); then
        fail "replica $i: podman kube play: $(grep -v systemd <<<"$out" | tail -n 5)" \
            "; init container: $(podman logs "$pod-migrate" 2>&1 | tail -n 3)"
        podman pod rm -f -t 2 "$pod" >/dev/null 2>&1 || true
        continue
    fi
    code=000
    deadline=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$deadline" ]; do
        code=$(curl -s --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)
        [ "$code" = 200 ] && break
        sleep 0.1
    done
    ms=$((($(date +%s%N) - start) / 1000000))
    if [ "$code" = 200 ]; then
        times+=("$ms")
        pass "replica $i: ready (GET /readyz 200 on the probe's port $port) $ms ms after podman kube play"
    else
        fail "replica $i: /readyz never 200 (last $code); reaperd: $(podman logs "$pod-reaperd" 2>&1 | tail -n 3)"
    fi
    code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
    [ "$code" = 200 ] && pass "replica $i: liveness GET /healthz 200" || fail "replica $i: /healthz $code"

    rc=$(podman inspect --format '{{.State.ExitCode}} {{.State.Status}}' "$pod-migrate" 2>&1 || true)
    log=$(podman logs "$pod-migrate" 2>&1 || true)
    want="schema migrated"; [ "$i" = 0 ] || want="schema already current"
    if [ "$rc" = "0 exited" ] && grep -q "\"msg\":\"$want\"" <<<"$log"; then
        pass "replica $i: the init container ran --migrate and exited 0 ($want)"
    else
        fail "replica $i: init container: $rc; log: $(tail -n 3 <<<"$log")"
    fi
    n=$(psql "$REAPER_STORE_DSN" -Atc "SELECT count(*) FROM information_schema.tables WHERE table_schema = '$schema'")
    [ "$n" -gt 0 ] && pass "replica $i: $n tables in $schema" || fail "replica $i: no table in $schema"

    c=$pod-reaperd
    links=$(podman exec "$c" sh -c 'env | grep -c "^\(REAPER\|KUBERNETES\)_\(SERVICE\|PORT\)"' || true)
    [ "$links" = "$nlinks" ] && podman exec "$c" printenv REAPER_SERVICE_HOST REAPER_PORT >/dev/null &&
        pass "replica $i: reaperd ready with the $nlinks service-link variables in its env" ||
        fail "replica $i: $links service-link variables in the container, $nlinks injected"
    uids=$(podman exec "$c" sh -c 'grep "^Uid:" /proc/1/status' | awk '{print $2, $3}')
    ro=$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$c")
    caps=$(podman exec "$c" sh -c 'grep "^CapEff:" /proc/1/status' | awk '{print $2}')
    [ "$uids" = "10001 10001" ] && [ "$ro" = true ] && [ "$caps" = 0000000000000000 ] &&
        pass "replica $i: uid 10001, read-only root, no capabilities (the rendered securityContext)" ||
        fail "replica $i: uids '$uids', read-only '$ro', CapEff '$caps'"
    if out=$(podman exec "$c" reaperctl --config /etc/reaper/reaper.yaml --timeout 20 status 2>&1); then
        pass "replica $i: reaperctl status in the pod: $(head -n 1 <<<"$out")"
    else
        fail "replica $i: reaperctl status in the pod: $out"
    fi
    podman pod rm -f -t 15 "$pod" >/dev/null 2>&1 || true
done

echo "image $RP_IMAGE $(podman image inspect --format '{{.Size}}' "$RP_IMAGE") bytes; bases and build ${build_s} s;" \
    "time to ready from podman kube play: ${times[*]:-none} ms (replica 0, 1)"
if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
