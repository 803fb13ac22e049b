#!/usr/bin/env python3
"""The documentation stands alone (issue #16 item 6).

    check_docs.py SOURCE_DIR

Every Markdown file tracked in the repository: each relative link (and
image) resolves to a file or folder inside the repository, and a link to a
section of a Markdown file names a heading it has; no link or mention leaves
the repository through a relative path (../shared, ../something). The top
README opens with what reaper does, a quick start and where to go next, and
links the configuration reference, the contract and the developer docs;
LICENSE exists. Prints one line per failure; exit 1 when any.
"""
import os
import re
import subprocess
import sys

failures = []


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)


def anchors(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^#+\s+(.*?)\s*$", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            out.add(a)
    return out


def main():
    src = os.path.abspath(sys.argv[1])
    files = subprocess.run(["git", "-C", src, "ls-files", "--cached", "--others", "--exclude-standard", "*.md", "**/*.md"], capture_output=True,
                           text=True).stdout.split()
    if not files:  # not a git checkout: walk it
        files = [os.path.relpath(os.path.join(b, f), src) for b, _, fs in os.walk(src)
                 for f in fs if f.endswith(".md") and "/build" not in b and "/.run" not in b]
    files = sorted(set(files) | {f for f in ("README.md",) if os.path.exists(os.path.join(src, f))})
    # Files the other helpers' work may add are checked the same way.
    for rel in files:
        path = os.path.join(src, rel)
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8").read()
        text_nocode = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text_nocode):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # a URL, not a path in the repository
            file_part, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not (dest == src or dest.startswith(src + os.sep)):
                fail("%s: link %s leaves the repository" % (rel, target))
                continue
            if not os.path.exists(dest):
                fail("%s: link %s names nothing" % (rel, target))
                continue
            if frag and dest.endswith(".md") and frag not in anchors(dest):
                fail("%s: link %s names no heading of %s" % (rel, target, os.path.relpath(dest, src)))
        if re.search(r"\.\./shared\b", text):
            fail("%s: mentions ../shared (outside the repository)" % rel)
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    heads = re.findall(r"^## (.*)$", readme, re.M)
    if heads[:3] != ["Quick start", "Where to go next", "Commands"]:
        fail("README.md: sections Quick start, Where to go next first (%s)" % heads)
    first = readme.split("\n## ")[0]
    if "reaper" not in first or len(first.split()) < 60:
        fail("README.md opens with what reaper does for an operator")
    for need in ("docs/CONFIGURATION.md", "docs/CONTRACT.md", "docs/DESIGN.md", "docs/DEVELOPING.md",
                 "helm/reaper/README.md", "LICENSE"):
        if "](%s)" % need not in readme:
            fail("README.md links %s" % need)
    lic = os.path.join(src, "LICENSE")
    if not os.path.exists(lic) or "MIT License" not in open(lic).read():
        fail("LICENSE holds the MIT license")
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("ok   %d Markdown files: every relative link stays inside the repository and resolves" % len(files))


if __name__ == "__main__":
    main()
