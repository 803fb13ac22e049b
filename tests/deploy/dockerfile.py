#!/usr/bin/env python3
"""Reads the facts the image tests need out of the Dockerfile, so that the
tests check the file as written (a library missing from its runtime list
fails them), never a copy of it.

    dockerfile.py DOCKERFILE packages     the runtime stage's packages, one a line
    dockerfile.py DOCKERFILE build-packages  the build stage's apt packages, one a line
    dockerfile.py DOCKERFILE env          the runtime stage's ENV, NAME=VALUE a line
    dockerfile.py DOCKERFILE user         the runtime stage's USER
    dockerfile.py DOCKERFILE entrypoint   the ENTRYPOINT's program
    dockerfile.py DOCKERFILE healthcheck  the HEALTHCHECK command, NUL-separated argv
    dockerfile.py DOCKERFILE check        the shape: exit 1 with a message when wrong

Exit codes: 0 ok; 1 the Dockerfile is not as the tests expect; 2 usage.
"""
import json
import re
import shlex
import sys


def instructions(path):
    """(instruction, argument text) pairs, continuation lines joined."""
    out, buf = [], ""
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def stages(path):
    """[(from line, [(instruction, text)...])] in order."""
    result = []
    for ins, text in instructions(path):
        if ins == "FROM":
            result.append((text, []))
        elif result:
            result[-1][1].append((ins, text))
    return result


def fail(msg):
    print("Dockerfile: " + msg, file=sys.stderr)
    sys.exit(1)


def runtime(path):
    st = stages(path)
    if len(st) < 2:
        fail("expected a multi-stage build (a build stage and a runtime stage)")
    return st


def args_of(body):
    res = {}
    for ins, text in body:
        if ins == "ARG" and "=" in text:
            name, _, value = text.partition("=")
            res[name.strip()] = " ".join(shlex.split(value))
    return res


def packages(path):
    _, body = runtime(path)[-1]
    args = args_of(body)
    pk = args.get("RUNTIME_PACKAGES", "").split()
    if not pk:
        fail("the runtime stage has no ARG RUNTIME_PACKAGES=\"...\" list")
    # The list must be what apt installs, not decoration.
    installs = [t for i, t in body if i == "RUN" and "apt-get install" in t]
    if not installs or not all("${RUNTIME_PACKAGES}" in t for t in installs):
        fail("the runtime stage must apt-get install exactly ${RUNTIME_PACKAGES}")
    for t in installs:
        after = t.split("apt-get install", 1)[1].split("&&", 1)[0].split()
        extra = [w for w in after if not w.startswith("-") and w != "${RUNTIME_PACKAGES}"]
        if extra:
            fail("the runtime stage installs packages outside RUNTIME_PACKAGES: " + " ".join(extra))
    return pk


def build_packages(path):
    _, body = runtime(path)[0]
    pk = []
    for ins, text in body:
        if ins == "RUN" and "apt-get install" in text:
            after = text.split("apt-get install", 1)[1].split("&&", 1)[0].split()
            pk += [w for w in after if not w.startswith("-")]
    if not pk:
        fail("the build stage installs no packages")
    return pk


def env(path):
    res = []
    for ins, text in runtime(path)[-1][1]:
        if ins == "ENV":
            for word in shlex.split(text):
                if "=" not in word:
                    fail("ENV " + text + ": write ENV NAME=VALUE")
                res.append(word)
    return res


def last(path, what):
    found = [t for i, t in runtime(path)[-1][1] if i == what]
    if not found:
        fail("the runtime stage has no " + what)
    return found[-1]


def exec_form(text, what):
    try:
        argv = json.loads(text)
    except ValueError:
        fail(what + " must be in exec form (a JSON array): " + text)
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        fail(what + " must be a non-empty JSON array of strings")
    return argv


def healthcheck(path):
    text = last(path, "HEALTHCHECK")
    m = re.search(r"\bCMD\s+(\[.*\])\s*$", text)
    if not m:
        fail("HEALTHCHECK must be CMD [ ... ] in exec form")
    return exec_form(m.group(1), "HEALTHCHECK CMD")


def check(path):
    st = runtime(path)
    build_from, run_from = st[0][0].split()[0], st[-1][0].split()[0]
    if not re.fullmatch(r"debian:12(\.[0-9.]+)?", build_from):
        fail("the build stage must be FROM debian:12 (Debian 12), not " + build_from)
    if not re.fullmatch(r"debian:12(\.[0-9.]+)?-slim", run_from):
        fail("the runtime stage must be FROM debian:12-slim, not " + run_from)
    user = last(path, "USER").split(":")[0]
    if user in ("0", "root"):
        fail("the runtime stage must not run as root")
    entry = exec_form(last(path, "ENTRYPOINT"), "ENTRYPOINT")
    if not entry[0].endswith("/reaperd"):
        fail("the entry point must be reaperd, not " + entry[0])
    hc = healthcheck(path)
    if hc[0].endswith("/reaperd") and "--healthcheck" not in hc:
        fail("HEALTHCHECK runs reaperd without --healthcheck")
    packages(path)
    # The environment wins over reaper.yaml: configuration set by ENV in the
    # image would beat the file an operator mounts (issue #16).
    conf = [w for w in env(path) if w.startswith("REAPER_")]
    if conf:
        fail("the runtime stage sets configuration through ENV (" + ", ".join(conf) +
             "): it would beat reaper.yaml; leave it to the file or the pod's env")
    # The context has no .git: the revision --version shows comes in as a
    # build argument handed to CMake.
    build = st[0][1]
    if "REAPER_GIT_REV" not in [t.partition("=")[0].strip() for i, t in build if i == "ARG"]:
        fail("the build stage must take ARG REAPER_GIT_REV (no .git in the context)")
    if not any(i == "RUN" and re.search(r'-DREAPER_GIT_REV="?\$\{?REAPER_GIT_REV\}?"?', t)
               for i, t in build):
        fail("the build stage must configure with -DREAPER_GIT_REV=\"${REAPER_GIT_REV}\"")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    path, what = sys.argv[1], sys.argv[2]
    if what == "packages":
        print("\n".join(packages(path)))
    elif what == "build-packages":
        print("\n".join(build_packages(path)))
    elif what == "env":
        print("\n".join(env(path)))
    elif what == "user":
        print(last(path, "USER"))
    elif what == "entrypoint":
        print(exec_form(last(path, "ENTRYPOINT"), "ENTRYPOINT")[0])
    elif what == "healthcheck":
        sys.stdout.write("\0".join(healthcheck(path)) + "\0")
    elif what == "check":
        check(path)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
