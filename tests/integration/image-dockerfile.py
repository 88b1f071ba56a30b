#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""image-dockerfile.py — reads docker/Dockerfile for the image tests.

  image-dockerfile.py layers DOCKERFILE [STAGE]
      One stage (default: the last, the runtime image) as shell assignments
      for the image tests to eval: COPY_SRC[i], COPY_DST[i] (COPY --from=X
      sources are printed as "@X:/path"; a relative destination is resolved
      against WORKDIR), IMAGE_USER, WORKDIR, ENTRYPOINT, CMD and RUN_CMDS
      (bash arrays), IMAGE_ENV (KEY=VALUE words), STAGE_ARGS (the names the
      stage declares with ARG: what a --build-arg reaches its RUNs with).
      So the tests run what the image runs, not a copy of it.

  image-dockerfile.py context REPO OUTDIR
      The build context `docker build -f docker/Dockerfile REPO` sends:
      copies every file of REPO that REPO/.dockerignore admits into OUTDIR
      (Docker's rules: Go-style patterns with **, a pattern matching a
      folder matches what is inside, the last matching pattern wins, !
      re-admits) and prints "FILES BYTES TREE_FILES TREE_BYTES".

  image-dockerfile.py admits REPO PATH...
      For each PATH (relative to REPO), "yes PATH" or "no PATH": whether
      .dockerignore lets it into the context.

  image-dockerfile.py lint DOCKERFILE
      A reading lint (hadolint is not in Debian): every RUN that installs
      with apt-get takes its packages from a docker/*-packages.txt list that
      the stage COPYs, and names none itself; apt-get update and install
      in the same RUN, --no-install-recommends, lists removed; every FROM
      pinned (a dated debian:<suite>-<YYYYMMDD>-slim ARG default, or a
      digest); ENTRYPOINT and CMD in exec form.  Prints each problem and
      exits 1 when there is one.
"""
import json
import os
import re
import shutil
import shlex
import sys


def instructions(path):
    """(line number, keyword, argument text) per instruction, with
    continuation lines joined and comments dropped."""
    out, buf, start = [], "", 0
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not buf and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if buf and line.lstrip().startswith("#"):
                continue
            if not buf:
                start = n
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            buf += line
            kw, _, arg = buf.strip().partition(" ")
            out.append((start, kw.upper(), arg.strip()))
            buf = ""
    return out


def stages(ins):
    """Instructions split by FROM: a list of (from line, [instructions])."""
    st = []
    for i in ins:
        if i[1] == "FROM":
            st.append((i, []))
        elif st:
            st[-1][1].append(i)
    return st


def arg_defaults(ins):
    d = {}
    for _, kw, arg in ins:
        if kw == "ARG" and "=" in arg:
            k, v = arg.split("=", 1)
            d.setdefault(k, v)
    return d


def exec_form(arg):
    try:
        v = json.loads(arg)
    except ValueError:
        return None
    return v if isinstance(v, list) and all(isinstance(s, str) for s in v) else None


def layers(path, stage=None):
    ins = instructions(path)
    st = stages(ins)
    if stage is None:
        _, body = st[-1]
    else:
        named = [b for (f, b) in st if re.search(r"\bAS\s+" + re.escape(stage) + r"\s*$",
                                                  f[2], re.I)]
        if not named:
            sys.exit(f"{path}: no stage named {stage}")
        body = named[0]
    copies, user, env, runs, args = [], "root", [], [], []
    entry, cmd, workdir = [], [], "/"
    for n, kw, arg in body:
        if kw == "COPY":
            words = shlex.split(arg)
            frm = [w for w in words if w.startswith("--from=")]
            words = [w for w in words if not w.startswith("--")]
            if len(words) != 2:
                sys.exit(f"{path}:{n}: COPY with {len(words)} paths: the check handles one source")
            src, dst = words
            if frm:
                src = "@" + frm[0][len("--from="):] + ":" + src
            if not dst.startswith("/"):
                dst = workdir.rstrip("/") + "/" + (dst[2:] if dst.startswith("./") else dst)
            copies.append((src, dst))
        elif kw == "WORKDIR":
            workdir = arg
        elif kw == "RUN":
            runs.append(arg)
        elif kw == "ARG":
            args.append(arg.split("=", 1)[0])
        elif kw == "USER":
            user = arg
        elif kw == "ENV":
            k, _, v = arg.partition("=")
            env.append(f"{k}={v}")
        elif kw == "ENTRYPOINT":
            entry = exec_form(arg) or sys.exit(f"{path}:{n}: ENTRYPOINT is not in exec form")
        elif kw == "CMD":
            cmd = exec_form(arg) or sys.exit(f"{path}:{n}: CMD is not in exec form")
    q = shlex.quote
    for i, (s, d) in enumerate(copies):
        print(f"COPY_SRC[{i}]={q(s)}; COPY_DST[{i}]={q(d)}")
    print(f"IMAGE_USER={q(user)}")
    print(f"WORKDIR={q(workdir)}")
    print("ENTRYPOINT=(" + " ".join(q(w) for w in entry) + ")")
    print("CMD=(" + " ".join(q(w) for w in cmd) + ")")
    print("RUN_CMDS=(" + " ".join(q(w) for w in runs) + ")")
    print("IMAGE_ENV=(" + " ".join(q(w) for w in env) + ")")
    print("STAGE_ARGS=(" + " ".join(q(w) for w in args) + ")")


def lint(path):
    problems = []
    ins = instructions(path)
    args = arg_defaults(ins)

    def bad(n, what):
        problems.append(f"{path}:{n}: {what}")

    for (n, _, arg), body in stages(ins):
        image = arg.split()[0]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), image)
        if "@sha256:" not in image and not re.fullmatch(r"debian:[a-z]+-\d{8}-slim", image):
            bad(n, f"FROM {image}: not pinned (a dated debian:<suite>-<YYYYMMDD>-slim, or a digest)")
        copied = set()
        for m, kw, text in body:
            if kw == "COPY":
                words = [w for w in shlex.split(text) if not w.startswith("--")]
                if words and re.fullmatch(r"docker/[\w.-]+-packages\.txt", words[0]):
                    copied.add(words[-1])
            if kw != "RUN" or not re.search(r"\bapt-get\b.*\binstall\b", text):
                continue
            for cmdtext in re.split(r"&&|;|\|\|", text):
                words = cmdtext.split()
                if "apt-get" not in words or "install" not in words:
                    continue
                rest = words[words.index("install") + 1:]
                if "--no-install-recommends" not in rest:
                    bad(m, "apt-get install without --no-install-recommends")
                literal = [w for w in rest if not w.startswith("-")
                           and not w.startswith("$(") and not w.endswith(")")
                           and not w.startswith("'") and not w.endswith("'")]
                if literal:
                    bad(m, f"apt-get install names packages itself ({' '.join(literal)}): "
                           "put them in a docker/*-packages.txt list")
                lists = re.findall(r"\$\(sed -e 's/#\.\*//' (\S+)\)", cmdtext)
                if not lists:
                    bad(m, "apt-get install does not read its packages with "
                           "$(sed -e 's/#.*//' LIST)")
                for lst in lists:
                    if lst not in copied:
                        bad(m, f"apt-get install reads {lst}, which this stage does not "
                               "COPY from docker/*-packages.txt")
            if "apt-get update" not in text:
                bad(m, "apt-get install without apt-get update in the same RUN (stale lists)")
            if "rm -rf /var/lib/apt/lists/*" not in text:
                bad(m, "apt lists not removed in the RUN that installs")
        for m, kw, text in body:
            if kw in ("ENTRYPOINT", "CMD") and exec_form(text) is None:
                bad(m, f"{kw} is not in exec form (a shell would be PID 1 and swallow SIGTERM)")
    for p in problems:
        print(p)
    return 1 if problems else 0


def ignore_rules(repo):
    rules = []
    try:
        lines = open(os.path.join(repo, ".dockerignore")).read().splitlines()
    except FileNotFoundError:
        return rules
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        pat = os.path.normpath(line[1:] if neg else line).lstrip("/")
        rx, i = "", 0
        while i < len(pat):
            c = pat[i]
            if pat.startswith("**/", i):
                rx += "(?:.*/)?"
                i += 3
                continue
            if pat.startswith("**", i):
                rx += ".*"
                i += 2
                continue
            rx += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c) if c not in "[]-^" else c)
            i += 1
        rules.append((re.compile(rx + "$"), neg))
    return rules


def admitted(rules, rel):
    """Docker's verdict for one path: the last rule that matches the path or
    one of its parent folders decides; no rule, admitted."""
    parts = rel.split("/")
    cands = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    keep = True
    for rx, neg in rules:
        if any(rx.match(c) for c in cands):
            keep = neg
    return keep


def context(repo, out):
    rules = ignore_rules(repo)
    n = size = tn = tsize = 0
    # The tree is live: another test may be building an image root under
    # build/image at the same time (0021), with /proc mounted in it and files
    # coming and going.  So the walk stays on the repo's file system (as the
    # Docker client's context walk does not cross into mounts a build never
    # sees) and skips a file that vanishes between listing and reading.
    for d, dirs, files in os.walk(repo):
        dirs[:] = sorted(x for x in dirs if not os.path.ismount(os.path.join(d, x)))
        for f in files:
            full = os.path.join(d, f)
            try:
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                rel = os.path.relpath(full, repo)
                b = os.path.getsize(full)
            except FileNotFoundError:
                continue
            tn, tsize = tn + 1, tsize + b
            if admitted(rules, rel):
                n, size = n + 1, size + b
                dst = os.path.join(out, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(full, dst)
    print(n, size, tn, tsize)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "context":
        context(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if len(sys.argv) >= 4 and sys.argv[1] == "admits":
        r = ignore_rules(sys.argv[2])
        for rel in sys.argv[3:]:
            print("yes" if admitted(r, rel) else "no", rel)
        sys.exit(0)
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in ("layers", "lint"):
        sys.exit(__doc__)
    if sys.argv[1] == "layers":
        layers(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else None)
    else:
        sys.exit(lint(sys.argv[2]))
