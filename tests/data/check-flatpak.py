#!/usr/bin/env python3
"""The Flatpak manifest is one flatpak-builder reads and one that builds Napkin (TAP).

Usage: check-flatpak.py MANIFEST SOURCE_ROOT APP_ID

Where flatpak-builder is installed, `flatpak-builder --show-manifest` must parse it
without a warning (it warns, and still exits 0, on an unknown key or source type).
Everywhere, its structure is checked: the app id, the GNOME runtime and SDK, the
command the meson build installs, the sandbox permissions a GTK app needs, every
module's build system and sources (pinned: a git tag or commit, an archive's sha256),
and the last module building this source tree with meson, CUDA off so that the app
builds without the toolkit (docs/packaging.md).
"""
import json
import os
import re
import shutil
import subprocess
import sys

manifest_path, source_root, app_id = sys.argv[1:4]
n = 0
failed = False


def check(ok, what, detail=""):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {what}")
    if not ok:
        failed = True
        for line in str(detail).splitlines():
            print("# " + line)


BUILDSYSTEMS = {"autotools", "cmake", "cmake-ninja", "meson", "simple", "qmake"}
SOURCE_TYPES = {"archive", "git", "bzr", "svn", "dir", "file", "script", "shell", "patch", "extra-data", "inline"}

if shutil.which("flatpak-builder"):
    p = subprocess.run(["flatpak-builder", "--show-manifest", manifest_path], capture_output=True, text=True)
    shown = None
    try:
        shown = json.loads(p.stdout)
    except ValueError as e:
        pass
    check(p.returncode == 0 and p.stderr.strip() == "" and shown is not None,
          "flatpak-builder --show-manifest reads it without a warning", p.stderr)
    check(shown is not None and shown.get("id") == app_id, "flatpak-builder sees the app id")
else:
    n += 1
    print(f"ok {n} - # SKIP flatpak-builder not installed")

with open(manifest_path) as f:
    m = json.load(f)

check(m.get("id") == app_id, f"id is {app_id}", m.get("id"))
check(m.get("runtime") == "org.gnome.Platform" and m.get("sdk") == "org.gnome.Sdk", "GNOME runtime and SDK")
check(re.fullmatch(r"\d+", str(m.get("runtime-version", ""))) is not None, "a GNOME runtime version",
      m.get("runtime-version"))
check(m.get("command") == "napkin", "the command is the installed napkin")
args = m.get("finish-args", [])
check("--socket=wayland" in args and "--socket=fallback-x11" in args and "--share=ipc" in args,
      "finish-args: Wayland, X11 fallback, IPC", args)
check(not any(a.startswith("--filesystem=host") or a == "--filesystem=home" for a in args),
      "no blanket file system access (files come through the portal)", args)

modules = m.get("modules", [])
check(isinstance(modules, list) and modules, "modules listed")
for mod in modules:
    if isinstance(mod, str):
        check(os.path.exists(os.path.join(os.path.dirname(manifest_path), mod)), f"module file {mod} exists")
        continue
    name = mod.get("name", "?")
    check(bool(mod.get("name")), f"module {name} has a name")
    check(mod.get("buildsystem", "autotools") in BUILDSYSTEMS, f"module {name}: known build system",
          mod.get("buildsystem"))
    sources = mod.get("sources", [])
    check(bool(sources), f"module {name} has sources")
    for src in sources:
        t = src.get("type")
        check(t in SOURCE_TYPES, f"module {name}: source type {t} known")
        if t == "git":
            check(src.get("url", "").startswith("https://") and (src.get("tag") or src.get("commit")),
                  f"module {name}: git source pinned to a tag or commit", src)
        if t in ("archive", "file") and "url" in src:
            check(re.fullmatch(r"[0-9a-f]{64}", src.get("sha256", "")) is not None,
                  f"module {name}: {t} source has a sha256", src)

last = modules[-1] if modules and isinstance(modules[-1], dict) else {}
check(last.get("name") == "napkin" and last.get("buildsystem") == "meson", "the last module builds napkin with meson")
dirs = [s for s in last.get("sources", []) if s.get("type") == "dir"]
root = os.path.realpath(os.path.join(os.path.dirname(manifest_path), dirs[0]["path"])) if dirs else ""
check(root == os.path.realpath(source_root), "its source is this tree", f"{root} != {source_root}")
opts = last.get("config-opts", [])
check("-Dgui=enabled" in opts, "it builds the editor", opts)
check("-Dnvrtc=disabled" in opts, "it builds without CUDA (the app runs without it)", opts)
with open(os.path.join(source_root, "meson_options.txt")) as f:
    known = set(re.findall(r"option\('([^']+)'", f.read()))
for o in opts:
    if o.startswith("-D"):
        key = o[2:].split("=", 1)[0]
        check(key in known or key.startswith(("b_", "c_")) or key in ("buildtype", "prefix"),
              f"config-opt {key} is an option of the meson build", sorted(known))

print(f"1..{n}")
sys.exit(1 if failed else 0)
