#!/usr/bin/env python3
"""Check that every relative link in the repository's Markdown resolves.

    python3 docs/checklinks.py            # every tracked *.md
    python3 docs/checklinks.py README.md docs/*.md

A link [text](path#anchor) must name an existing file or folder relative to
the page, and an anchor must be a heading of the page it points into
(GitHub's slugs). Absolute URLs are not fetched. Exit status 1 on a broken
link, each printed as file:line.
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading: str) -> str:
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.startswith("#"):
            continue
        s = slug(line.lstrip("#"))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def check(page: str) -> list[str]:
    bad = []
    fenced = False
    for no, line in enumerate(open(page, encoding="utf-8"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
        for m in LINK.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z]+:", target) or target.startswith("<"):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                bad.append(f"{page}:{no}: {target}: no such file")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append(f"{page}:{no}: {target}: no heading #{anchor} in {dest}")
    return bad


def main() -> int:
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
    os.chdir(root)
    pages = sys.argv[1:] or subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True, check=True).stdout.split()
    bad = [b for p in pages if os.path.exists(p) for b in check(p)]
    print("\n".join(bad) if bad else f"{len(pages)} pages, every relative link resolves")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
