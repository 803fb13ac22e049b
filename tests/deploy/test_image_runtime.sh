#!/usr/bin/env bash
# The container image's runtime stage, proved without a Docker engine: a
# Debian 12 minbase root (debootstrap; debian:12-slim is minbase with the
# docs cut) with exactly the packages the Dockerfile's runtime stage
# installs (RUNTIME_PACKAGES, read from the Dockerfile), the built reaperd
# and reaperctl copied to where the image puts them, and run inside it with
# chroot as the image's user:
#   - (first) every pkg-config module CMakeLists.txt needs is given by a
#     package the build stage installs, as this Debian 12 machine maps them;
#   - ldd finds every library of both binaries in the root;
#   - reaperd --version and reaperctl --version exit 0;
#   - reaperd --check-config accepts the Helm chart's default reaper.yaml
#     (values.yaml's config, as the chart's ConfigMap carries it) with the
#     Dockerfile's ENV (none that configures: dockerfile.py check), and
#     refuses a broken one with exit 2;
#   - the HEALTHCHECK command (reaperd --healthcheck) passes against a
#     /healthz answering 200 at the http.listen of the configuration in
#     force, and fails against 503 and against nothing listening.
# A library the Dockerfile forgot makes the first two fail.
#
# The root is kept in $RP_RUN/image-root-<hash of the package list> and made
# again when the list changes (about a minute; debootstrap's downloads are
# cached in $RP_RUN/debootstrap-cache). debootstrap and the chroot run in a
# private mount namespace (unshare), so nothing stays mounted.
#
# Needs root (debootstrap, chroot), debootstrap, python3 with PyYAML ($PYTHON3
# names it; ctest gives Debian's), and the
# Debian mirror (RP_DEBIAN_MIRROR) the first time. REAPERD and REAPERCTL name
# the built binaries (ctest sets them).
set -euo pipefail
src=${REAPER_SOURCE_DIR:?REAPER_SOURCE_DIR must name the source tree}
source "$src/scripts/lib.sh"
: "${REAPERD:?REAPERD must name the built reaperd}" "${REAPERCTL:?REAPERCTL must name the built reaperctl}"
[ "$(id -u)" -eq 0 ] || rp_die "needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null || rp_die "debootstrap is not installed: run scripts/install-deps"

py=${PYTHON3:-python3}
df=$src/Dockerfile
parse() { "$py" "$src/tests/deploy/dockerfile.py" "$df" "$@"; }
parse check
mapfile -t pkgs < <(parse packages)
mapfile -t image_env < <(parse env | grep -v "^$" || true)
user=$(parse user)
entry=$(parse entrypoint)
bindir=$(dirname "$entry")

failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }

# --- the build stage's packages -------------------------------------------------
# Every pkg-config module CMakeLists.txt requires outside its if() blocks (the
# test-only ones are inside) comes, on this Debian 12 machine, from a package
# the build stage installs; and the tools are there.
mapfile -t build_pkgs < <(parse build-packages)
mapfile -t modules < <(awk '
    /^[[:space:]]*if[[:space:]]*\(/ { depth++ }
    /^[[:space:]]*endif[[:space:]]*\(/ { depth-- }
    depth == 0 && /pkg_check_modules\(/ {
        sub(/.*IMPORTED_TARGET[[:space:]]+/, ""); sub(/\).*/, ""); n = split($0, m, /[[:space:]]+/)
        for (i = 1; i <= n; i++) if (m[i] != "") print m[i]
    }' "$src/CMakeLists.txt")
[ "${#modules[@]}" -ge 5 ] || fail "read the pkg-config modules of CMakeLists.txt (found ${#modules[@]})"
for m in "${modules[@]}"; do
    pc=$(pkg-config --path "$m" 2>/dev/null) || { fail "pkg-config does not know $m here"; continue; }
    owner=$(dpkg -S "$(realpath "$pc")" 2>/dev/null | cut -d: -f1 | head -n 1)
    [ -n "$owner" ] || owner=$(dpkg -S "$pc" 2>/dev/null | cut -d: -f1 | head -n 1)
    if printf '%s\n' "${build_pkgs[@]}" | grep -qxF "$owner"; then
        pass "build stage: $m ($owner)"
    else
        fail "build stage: the Dockerfile does not install ${owner:-the package of $m}, which gives $m"
    fi
done
for tool in build-essential cmake pkg-config; do
    printf '%s\n' "${build_pkgs[@]}" | grep -qxF "$tool" && pass "build stage: $tool" ||
        fail "build stage: the Dockerfile does not install $tool"
done

# The revision the image build passes (-DREAPER_GIT_REV, parse check above)
# is what the binaries are built with, though the context has no .git.
cfg=$(mktemp -d)
if cmake -S "$src" -B "$cfg" -DREAPER_TESTS=OFF -DREAPER_GIT_REV=image-rev-test >/dev/null 2>&1 &&
    grep -qsF '#define REAPER_GIT_REV "image-rev-test"' "$cfg/support/include/version.h"; then
    pass "build stage: -DREAPER_GIT_REV reaches the generated version.h"
else
    fail "build stage: -DREAPER_GIT_REV=image-rev-test did not reach the generated version.h"
fi
rm -rf "$cfg"

# --- the root ---------------------------------------------------------------
key=$(printf '%s\n' bookworm minbase "${pkgs[@]}" | sort | sha256sum | cut -c1-12)
root=$RP_RUN/image-root-$key
mark=$root/.reaper-image-root-done
mkdir -p "$RP_RUN/debootstrap-cache"
exec 9>"$RP_RUN/image-root.lock"
flock 9
if [ ! -e "$mark" ]; then
    for old in "$RP_RUN"/image-root-*; do
        [ -d "$old" ] && rm -rf --one-file-system "$old"
    done
    log=$RP_RUN/image-root.log
    list=$(IFS=,; echo "${pkgs[*]}")
    t0=$SECONDS
    rp_log "building a Debian 12 root with $list in $root (log $log)"
    if ! unshare --mount --propagation private -- debootstrap --variant=minbase --include="$list" \
            --cache-dir="$RP_RUN/debootstrap-cache" bookworm "$root" "$RP_DEBIAN_MIRROR" > "$log" 2>&1; then
        tail -n 15 "$log" >&2
        rm -rf --one-file-system "$root"
        rp_die "debootstrap of bookworm from $RP_DEBIAN_MIRROR failed; log: $log"
    fi
    # What the image's RUN does after apt: the user reaperd runs as.
    uid=${user%%:*} gid=${user#*:}
    chroot "$root" groupadd --system --gid "$gid" reaper
    chroot "$root" useradd --system --uid "$uid" --gid "$gid" --home-dir /nonexistent \
        --no-create-home --shell /usr/sbin/nologin reaper
    touch "$mark"
    rp_log "root made in $((SECONDS - t0)) s"
fi

# Every package the Dockerfile names is installed in the root, and nothing
# that was only pulled in by a -dev package (there are none in minbase).
for p in "${pkgs[@]}"; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        fail "package $p is not installed in the root"
done

install -D -m 0755 "$REAPERD" "$root$bindir/reaperd"
install -D -m 0755 "$REAPERCTL" "$root$bindir/reaperctl"

# in_root CMD...: runs CMD in the root as the image's user, with only the
# image's environment, /proc mounted in a namespace of its own.
in_root() {
    unshare --mount --propagation private -- bash -c '
        root=$1; user=$2; shift 2
        mount -t proc proc "$root/proc"
        exec chroot --userspec="$user" "$root" "$@"' in_root "$root" "$user" \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/nonexistent \
        "${image_env[@]}" "${extra_env[@]}" "$@"
}
extra_env=()

# --- the libraries ------------------------------------------------------------
for b in reaperd reaperctl; do
    out=$(in_root ldd "$bindir/$b" 2>&1) || true
    if grep -q 'not found' <<<"$out"; then
        fail "$b: libraries missing from the runtime packages: $(grep 'not found' <<<"$out" | awk '{print $1}' | tr '\n' ' ')"
    else
        pass "$b: every library found in the root"
    fi
done

# --- --version ----------------------------------------------------------------
for b in reaperd reaperctl; do
    if out=$(in_root "$bindir/$b" --version 2>&1) && [[ $out == "$b "* ]]; then
        pass "$b --version: $out"
    else
        fail "$b --version in the root: $out"
    fi
done

# --- --check-config with the chart's reaper.yaml --------------------------------
etc=$root/etc/reaper
rm -rf "$etc"; mkdir -p "$etc"
"$py" - "$src/helm/reaper/values.yaml" > "$etc/reaper.yaml" <<'PY'
import sys, yaml
print(yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["config"], sort_keys=False), end="")
PY
pwfile=$("$py" -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["config"]["broker"]["password_file"])' \
    "$src/helm/reaper/values.yaml")
rm -rf "$root$(dirname "$pwfile")"
install -D -m 0440 -o root -g "${user#*:}" /dev/null "$root$pwfile"
echo not-a-real-password > "$root$pwfile"
rc=0; out=$(in_root "$entry" --config /etc/reaper/reaper.yaml --check-config 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && grep -q '0.0.0.0:9464' <<<"$out"; then
    pass "reaperd --check-config accepts the chart's default reaper.yaml"
else
    fail "reaperd --check-config on the chart's reaper.yaml: exit $rc: $out"
fi
# ...and says no to a broken one (so the check above could fail).
sed -i 's/dead_letter_peek_limit: 100/dead_letter_peek_limit: 0/' "$etc/reaper.yaml"
rc=0; out=$(in_root "$entry" --config /etc/reaper/reaper.yaml --check-config 2>&1) || rc=$?
if [ "$rc" -eq 2 ] && grep -q 'reap.dead_letter_peek_limit' <<<"$out"; then
    pass "reaperd --check-config refuses a bad reaper.yaml with exit 2"
else
    fail "reaperd --check-config on a bad reaper.yaml: exit $rc: $out"
fi
rm -rf "$etc" "$root$(dirname "$pwfile")"

# --- the HEALTHCHECK command -----------------------------------------------------
mapfile -d '' -t hc < <(parse healthcheck)
stub_dir=$(mktemp -d)
stub_pid=""
cleanup() { [ -z "$stub_pid" ] || kill "$stub_pid" 2>/dev/null || true; rm -rf "$stub_dir"; }
trap cleanup EXIT
# A stub /healthz on a free loopback port; its status code is read from a
# file at every request. (The chroot shares the machine's network.)
"$py" - "$stub_dir" <<'PY' &
import http.server, os, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = int(open(os.path.join(d, "code")).read()) if self.path == "/healthz" else 404
        self.send_response(code); self.end_headers(); self.wfile.write(b"x\n")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(os.path.join(d, "port.tmp"), "w").write(str(s.server_address[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
s.serve_forever()
PY
stub_pid=$!
echo 200 > "$stub_dir/code"
rp_wait 10 "the stub" test -s "$stub_dir/port" || rp_die "the /healthz stub did not start"
port=$(cat "$stub_dir/port")
extra_env=("REAPER_HTTP_LISTEN=127.0.0.1:$port")
if in_root "${hc[@]}" >/dev/null 2>&1; then pass "HEALTHCHECK passes on /healthz 200"; else fail "HEALTHCHECK failed on /healthz 200"; fi
echo 503 > "$stub_dir/code"
if in_root "${hc[@]}" >/dev/null 2>&1; then fail "HEALTHCHECK passed on /healthz 503"; else pass "HEALTHCHECK fails on /healthz 503"; fi
kill "$stub_pid"; wait "$stub_pid" 2>/dev/null || true; stub_pid=""
if in_root "${hc[@]}" >/dev/null 2>&1; then fail "HEALTHCHECK passed with nothing listening"; else pass "HEALTHCHECK fails with nothing listening"; fi

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed (root: $root, packages: ${pkgs[*]})" >&2
    exit 1
fi
echo "the runtime stage runs reaper (${#pkgs[@]} packages: ${pkgs[*]})"
