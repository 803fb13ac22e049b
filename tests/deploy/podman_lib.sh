# Shared by the deploy tests that run podman (test_image_podman.sh,
# test_chart_pod.sh). Sourced after scripts/lib.sh.
#
# podman on these machines: the OCI runtime must be runc (crun refuses the
# cgroup layout), podman's default ulimits are refused (nofile and nproc
# are set explicitly) and containers share the machine's network (the
# private broker and database listen on loopback). A containers.conf of our
# own says so (CONTAINERS_CONF), so `podman run` and `podman kube play`
# both follow it. Images live in podman's usual store, so that the base
# images and the build cache outlive a checkout.
#
# No registry is reachable: the Dockerfile's bases (debian:12 and
# debian:12-slim) are made here from a Debian 12 debootstrap root and
# imported under the names the FROM lines resolve to.

RP_PODMAN_DIR=$RP_RUN/podman
RP_IMAGE=${RP_IMAGE:-localhost/reaper:deploy-test}

# rp_podman_skip: prints why podman cannot run here, or nothing.
rp_podman_skip() {
    command -v podman >/dev/null || { echo "podman is not installed (scripts/install-deps installs it)"; return; }
    command -v runc >/dev/null || { echo "runc is not installed (scripts/install-deps installs it)"; return; }
    [ "$(id -u)" -eq 0 ] || { echo "needs root (podman with host networking and runc)"; return; }
    podman info >/dev/null 2>&1 || { echo "podman info fails: $(podman info 2>&1 | tail -n 1)"; return; }
}

# rp_podman_setup: writes the containers.conf and exports CONTAINERS_CONF,
# then waits for the machine-wide lock of these tests (fd 7, held until the
# test exits): podman's store is the machine's, so two checkouts testing at
# once would build the same tag and play pods whose volumes share names.
rp_podman_setup() {
    exec 7>/tmp/reaper-podman-deploy.lock
    flock -w 1800 7 || rp_die "another checkout's podman deploy test held the lock for 30 min"
    mkdir -p "$RP_PODMAN_DIR"
    cat > "$RP_PODMAN_DIR/containers.conf.tmp" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1000:1000"]
netns = "host"
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
    mv "$RP_PODMAN_DIR/containers.conf.tmp" "$RP_PODMAN_DIR/containers.conf"
    export CONTAINERS_CONF=$RP_PODMAN_DIR/containers.conf
}

# rp_podman_bases: makes docker.io/library/debian:12 and :12-slim when
# podman's store lacks them, from a debootstrap root kept in
# $RP_RUN/image-bases (itself made when absent). debian:12 is the minbase
# root; debian:12-slim is the same with the documentation cut and kept out
# by dpkg, as the official slim images do.
rp_podman_bases() {
    local full=docker.io/library/debian:12 slim=docker.io/library/debian:12-slim
    local dir=$RP_RUN/image-bases
    mkdir -p "$dir" "$RP_RUN/debootstrap-cache"
    exec 8>"$dir/lock"
    flock 8
    if podman image exists "$full" && podman image exists "$slim"; then
        exec 8>&-
        return 0
    fi
    local root=$dir/bookworm t0=$SECONDS
    if [ ! -e "$root/.reaper-base-done" ]; then
        rm -rf --one-file-system "$root"
        rp_log "debootstrap of a Debian 12 minbase root in $root (log $dir/debootstrap.log)"
        if ! unshare --mount --propagation private -- debootstrap --variant=minbase \
                --cache-dir="$RP_RUN/debootstrap-cache" bookworm "$root" "$RP_DEBIAN_MIRROR" \
                > "$dir/debootstrap.log" 2>&1; then
            tail -n 15 "$dir/debootstrap.log" >&2
            rm -rf --one-file-system "$root"
            rp_die "debootstrap of bookworm from $RP_DEBIAN_MIRROR failed"
        fi
        # As the official images: no package cache, no lists.
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        printf 'deb %s bookworm main\n' "$RP_DEBIAN_MIRROR" > "$root/etc/apt/sources.list"
        touch "$root/.reaper-base-done"
    fi
    local tar=$dir/bookworm.tar
    tar --numeric-owner --xattrs -C "$root" --exclude=./.reaper-base-done \
        --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' -cf "$tar" .
    podman import -q --change 'CMD ["bash"]' "$tar" "$full" >/dev/null ||
        rp_die "podman import of $full failed"
    local sroot=$dir/bookworm-slim
    rm -rf --one-file-system "$sroot"
    cp -a "$root" "$sroot"
    cat > "$sroot/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
DPKG
    find "$sroot/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf "$sroot"/usr/share/{man,groff,info,lintian,linda,locale}/*
    tar --numeric-owner --xattrs -C "$sroot" --exclude=./.reaper-base-done \
        --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' -cf "$tar" .
    podman import -q --change 'CMD ["bash"]' "$tar" "$slim" >/dev/null ||
        rp_die "podman import of $slim failed"
    rm -rf --one-file-system "$sroot" "$tar"
    rp_log "base images $full and $slim made in $((SECONDS - t0)) s"
    exec 8>&-
}

# rp_podman_build: builds the image from the Dockerfile as it is, tagged
# $RP_IMAGE. podman's layer cache makes a rebuild of unchanged sources
# take seconds; a change under the context recompiles (a few minutes).
# --format docker: the OCI image format has no HEALTHCHECK (podman drops
# it), the Docker one keeps it, as `docker build` would.
rp_podman_build() {
    local src=$1 rev
    rev=$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)
    exec 8>"$RP_PODMAN_DIR/build.lock"
    flock 8
    local t0=$SECONDS
    if ! nice podman build --layers --format docker --build-arg REAPER_GIT_REV="$rev" -t "$RP_IMAGE" \
            -f "$src/Dockerfile" "$src" > "$RP_PODMAN_DIR/build.log" 2>&1; then
        tail -n 30 "$RP_PODMAN_DIR/build.log" >&2
        rp_die "podman build failed (log $RP_PODMAN_DIR/build.log)"
    fi
    # The build stage tagged too (from the cache: a second), so that the
    # prune below keeps its layers (apt's, then the compile) for the next
    # build; the prune drops what earlier builds left untagged (about 1 GB
    # each), so the store does not grow with every commit.
    nice podman build --layers --format docker --target build --build-arg REAPER_GIT_REV="$rev" \
        -t "${RP_IMAGE%:*}-build:${RP_IMAGE##*:}" -f "$src/Dockerfile" "$src" \
        >> "$RP_PODMAN_DIR/build.log" 2>&1 || rp_die "podman build --target build failed"
    podman image prune -f >/dev/null 2>&1 || true
    rp_log "image $RP_IMAGE built in $((SECONDS - t0)) s (log $RP_PODMAN_DIR/build.log)"
    exec 8>&-
}
