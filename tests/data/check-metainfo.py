#!/usr/bin/env python3
"""The desktop integration files pass their validators with nothing to say (TAP).

Usage: check-metainfo.py METAINFO DESKTOP VERSION

- desktop-file-validate prints nothing at all (no error, warning or hint);
- appstreamcli validate --pedantic reports no issue at any level except
  cid-contains-uppercase-letter: the application id io.github.napkin.Napkin is
  reverse DNS with a capitalised last part, as GNOME and Flathub ids are, and
  AppStream only mentions it as a pedantic hint (docs/packaging.md);
- the metainfo has a homepage and a bug tracker URL, and release notes for this
  version.
"""
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

ACCEPTED = {"cid-contains-uppercase-letter"}
metainfo, desktop, version = sys.argv[1:4]
n = 0
failed = False


def check(ok, what, detail=""):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {what}")
    if not ok:
        failed = True
        for line in detail.splitlines():
            print("# " + line)


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


if shutil.which("desktop-file-validate"):
    rc, out = run(["desktop-file-validate", desktop])
    check(rc == 0 and out.strip() == "", "desktop-file-validate: nothing to report", out)
else:
    print(f"ok {n + 1} - # SKIP desktop-file-validate not installed")
    n += 1

if shutil.which("appstreamcli"):
    rc, out = run(["appstreamcli", "validate", "--pedantic", "--no-net", "--explain", metainfo])
    tags = re.findall(r"^[EWIP]: \S+:(?:\d+:)? ?(\S+)", out, re.M)
    others = [t for t in tags if t not in ACCEPTED]
    check(rc == 0 and not others, "appstreamcli validate --pedantic: no issue but the id's capital", out)
else:
    print(f"ok {n + 1} - # SKIP appstreamcli not installed")
    n += 1

root = ET.parse(metainfo).getroot()
urls = {u.get("type"): (u.text or "").strip() for u in root.findall("url")}
for kind in ("homepage", "bugtracker", "vcs-browser"):
    check(urls.get(kind, "").startswith("https://"), f"metainfo has a {kind} URL", repr(urls))
releases = root.findall("releases/release")
check(releases and releases[0].get("version") == version,
      f"the newest release is this version ({version})", repr([r.get("version") for r in releases]))
notes = releases[0].find("description") if releases else None
check(notes is not None and len("".join(notes.itertext()).strip()) > 40, "the release has notes")
check(root.findtext("id") == "io.github.napkin.Napkin", "the id is the application id")

print(f"1..{n}")
sys.exit(1 if failed else 0)
