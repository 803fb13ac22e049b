#!/usr/bin/env bash
# The Helm chart rendered, without helm: builds helmrender (Go's
# text/template with Sprig, the engine and function library Helm uses; from
# Debian's golang-go and golang-github-masterminds-sprig-dev, no download)
# and renders helm/reaper for a set of value files, then check_render.py
# checks the manifests (every document parses, objects and fields as the
# chart promises) and runs the built reaperd --check-config on the
# reaper.yaml the ConfigMap carries.
#
# REAPER_SOURCE_DIR names the source tree, REAPERD the built reaperd,
# RP_DEPLOY_WORK a folder for the build (ctest gives one in the build tree);
# PYTHON3 the python with PyYAML.
set -euo pipefail
src=${REAPER_SOURCE_DIR:?REAPER_SOURCE_DIR must name the source tree}
: "${REAPERD:?REAPERD must name the built reaperd}"
work=${RP_DEPLOY_WORK:-$(mktemp -d)}
py=${PYTHON3:-python3}
gocode=/usr/share/gocode
command -v go >/dev/null || { echo "go is not installed: run scripts/install-deps" >&2; exit 1; }
[ -d "$gocode/src/github.com/Masterminds/sprig" ] ||
    { echo "Sprig is not installed (golang-github-masterminds-sprig-dev): run scripts/install-deps" >&2; exit 1; }

# GOPATH mode over Debian's Go sources. Debian installs module paths
# without their /vN suffix; two links give the import paths Sprig v3 uses.
gopath=$work/gopath
mkdir -p "$gopath/src/helmrender" "$gopath/src/github.com/Masterminds/sprig" "$gopath/src/github.com/Masterminds/semver"
ln -sfn "$gocode/src/github.com/Masterminds/sprig" "$gopath/src/github.com/Masterminds/sprig/v3"
ln -sfn "$gocode/src/github.com/Masterminds/semver" "$gopath/src/github.com/Masterminds/semver/v3"
cp "$src/tests/deploy/helmrender/main.go" "$gopath/src/helmrender/main.go"
(cd "$gopath/src/helmrender" &&
    GO111MODULE=off GOPATH="$gopath:$gocode" GOCACHE="$work/gocache" GOFLAGS= \
    go build -o "$work/helmrender" .)

exec "$py" "$src/tests/deploy/check_render.py" "$work/helmrender" "$src/helm/reaper" "$REAPERD" "$work"
