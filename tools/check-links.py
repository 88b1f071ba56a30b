#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-links.py — every relative link and #anchor in the Markdown files
points to something that exists.

    tools/check-links.py [FILE.md...]

Without arguments, checks the repository's Markdown files (git's tracked
and untracked-but-not-ignored *.md; every *.md outside build folders when
there is no git).  A link [text](target) or a reference [x]: target that is
not a URL must name an existing file or folder, relative to the file it is
in; an anchor (#frag, or path.md#frag) must be the slug of a heading of
that Markdown file, by GitHub's rules: the heading's text lowercased,
every character but letters, digits, spaces, '-' and '_' dropped, each
space made a '-', and "-1", "-2", ... added to repeated slugs.  Fenced
code blocks and code spans are skipped.  Prints each broken link as
FILE:LINE: what is wrong; exit 1 if any.  Run by `make test` and
`make docs-check`.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def md_files():
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return sorted(f for f in set(out.split()) if os.path.exists(os.path.join(ROOT, f)))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(".md")]
        return sorted(found)


def lines_outside_code(path):
    """(line number, text) of each line outside fenced code blocks."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                elif m.group(1) == fence:
                    fence = None
                continue
            if fence is None:
                yield n, line.rstrip("\n")


def slug(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for _, line in lines_outside_code(path):
            found.update(HTML_ID.findall(line))
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        _anchors[path] = found
    return _anchors[path]


def check(rel):
    path = os.path.join(ROOT, rel)
    errors = []
    for n, line in lines_outside_code(path):
        text = CODE_SPAN.sub("", line)
        targets = INLINE.findall(text)
        m = REFDEF.match(text)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if not t or re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):
                continue  # a URL (http:, mailto:, ...)
            file_part, _, frag = t.partition("#")
            target = path if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(target):
                errors.append(f"{rel}:{n}: {t}: no such file")
            elif frag and target.endswith(".md") and frag not in anchors(target):
                errors.append(f"{rel}:{n}: {t}: no heading '#{frag}' in "
                              f"{os.path.relpath(target, ROOT)}")
    return errors


def main():
    files = sys.argv[1:] or md_files()
    errors = [e for f in files for e in check(f)]
    for e in errors:
        print(e)
    print(f"check-links: {len(files)} files, {len(errors)} broken links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
