# syntax=docker/dockerfile:1
# The reaper image: reaperd (the entry point) and reaperctl.
#
#   docker build --build-arg REAPER_GIT_REV="$(git describe --always --dirty)" -t reaper:dev .
#   docker run --rm reaper:dev --version
#
# Two stages, both Debian 12 ("bookworm"): the first builds with the -dev
# packages of scripts/install-deps; the second is debian:12-slim with only
# the runtime libraries the binaries link (the list below was derived from
# `readelf -d` / `ldd` and `dpkg -S` on the built binaries) plus
# ca-certificates for TLS to the broker. tests/deploy/test_image_runtime.sh
# reads the RUNTIME_PACKAGES list from this file, makes a Debian 12 minbase
# root with exactly those packages and runs both binaries in it (chroot), so a
# library missing here fails the test. Keep the list on the ARG line.

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      librabbitmq-dev libpq-dev libevent-dev libmsgpack-dev libyaml-dev \
      libcurl4-openssl-dev libjansson-dev libpcre2-dev libssl-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The context has no .git (.dockerignore): the revision comes in as an
# argument, shown by --version and reaper_build_info.
ARG REAPER_GIT_REV=unknown
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREAPER_TESTS=OFF \
      -DREAPER_GIT_REV="${REAPER_GIT_REV}" \
 && cmake --build /build -j"$(nproc)" \
 && install -D -m 0755 /build/cmd/reaperd/reaperd /out/usr/local/bin/reaperd \
 && install -D -m 0755 /build/cmd/reaperctl/reaperctl /out/usr/local/bin/reaperctl \
 && strip --strip-debug /out/usr/local/bin/reaperd /out/usr/local/bin/reaperctl

FROM debian:12-slim AS runtime
ARG RUNTIME_PACKAGES="ca-certificates libcurl4 libevent-2.1-7 libevent-pthreads-2.1-7 libjansson4 libjemalloc2 libpcre2-8-0 libpq5 librabbitmq4 libssl3 libyaml-0-2"
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 reaper \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin reaper
COPY --from=build /out/ /
# No configuration through ENV: the environment wins over reaper.yaml, so a
# value set here would silently beat the file an operator mounts (the Helm
# chart sets http.listen in its ConfigMap). reaperd's own default for
# http.listen is 127.0.0.1:9464: give 0.0.0.0:9464 (file or
# REAPER_HTTP_LISTEN) to reach it from outside the container.
USER 10001:10001
EXPOSE 9464
# /healthz answers 200 while the loop runs. reaperd --healthcheck asks it at
# the http.listen of the configuration in force: the same environment, and
# the --config of the reaperd running as process 1.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/reaperd", "--healthcheck"]
ENTRYPOINT ["/usr/local/bin/reaperd"]
CMD []
