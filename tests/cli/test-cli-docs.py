#!/usr/bin/env python3
"""Every command and option the programs' --help lists is in their manual pages and in
napkin-cli's bash completion (docs/cli.md). TAP.

Usage: test-cli-docs.py NAPKIN_CLI SOURCE_ROOT COMPLETION [MAN_DIR] [NAPKIN]

SOURCE_ROOT/docs/man/*.1.rst are the sources; MAN_DIR holds the pages rst2man made from
them (when the build made them); NAPKIN is the editor, whose options napkin.1 lists.
"""
import json
import os
import re
import subprocess
import sys

cli, root, completion = sys.argv[1:4]
man_dir = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
app = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
n = 0
failed = False


def check(ok, what, detail=""):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {what}")
    if not ok:
        failed = True
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def output(*argv):
    return subprocess.run(argv, capture_output=True, text=True).stdout


def commands():
    text = output(cli, "--help")
    body = text.split("Commands:", 1)[1]
    return re.findall(r"^  ([a-z]+)\s", body, re.M)


def options(argv):
    """Long and short options of a --help (GOptionContext's layout)."""
    found = []
    for line in output(*argv).splitlines():
        m = re.match(r"^\s+(?:(-[A-Za-z]), )?(--[a-z][a-z0-9-]*)", line)
        if m:
            found += [o for o in m.groups() if o]
    return found


def sections(rst):
    """Command sections of napkin-cli.1.rst: heading 'NAME ...' underlined with '-'."""
    text = open(rst).read()
    m = re.search(r"^COMMANDS\n=+\n(.*?)(?=^[A-Z][A-Z ]+\n=+$)", text, re.M | re.S)
    lines = m.group(1).splitlines() if m else []
    heads = [i for i in range(len(lines) - 1)
             if re.fullmatch(r"-{3,}", lines[i + 1]) and re.match(r"[a-z]+\b", lines[i])]
    out = {}
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        out[lines[i].split()[0]] = "\n".join(lines[i:end])
    return out


def common(rst):
    text = open(rst).read()
    m = re.search(r"^OPTIONS OF EVERY COMMAND.*?(?=^[A-Z ]+\n=+$)", text, re.M | re.S)
    return m.group(0) if m else ""


def mentions(text, opt):
    return re.search(r"\*\*" + re.escape(opt) + r"\*\*", text) is not None


cli_rst = os.path.join(root, "docs", "man", "napkin-cli.1.rst")
secs = sections(cli_rst)
shared = common(cli_rst)
cmds = commands()
check(len(cmds) >= 10, "napkin-cli --help lists its commands", cmds)
check(sorted(secs) == sorted(cmds), "napkin-cli.1 has one section per command, no more",
      f"man: {sorted(secs)}\nhelp: {sorted(cmds)}")
per_command = {}
for cmd in cmds:
    opts = options([cli, cmd, "--help"])
    per_command[cmd] = opts
    missing = [o for o in opts if not mentions(secs.get(cmd, ""), o) and not mentions(shared, o)]
    check(opts and not missing, f"napkin-cli.1 documents every option of {cmd}", missing)

if man_dir:
    roff = open(os.path.join(man_dir, "napkin-cli.1")).read().replace("\\-", "-").replace("\\fB", "").replace("\\fP", "")
    missing = [c for c in cmds if not re.search(r"^\.SS " + c + r"\b", roff, re.M)]
    missing += sorted({o for opts in per_command.values() for o in opts if o not in roff})
    check(not missing, "the installed napkin-cli.1 (rst2man's) has every command and option", missing)

if app:
    app_rst = open(os.path.join(root, "docs", "man", "napkin.1.rst")).read()
    opts = [o for o in options([app, "--help"]) if o not in ("--help-all", "--help-gapplication")]
    missing = [o for o in opts if not mentions(app_rst, o)]
    check(opts and not missing, "napkin.1 documents every option of napkin --help", missing)
    if man_dir:
        roff = open(os.path.join(man_dir, "napkin.1")).read().replace("\\-", "-").replace("\\fB", "")
        check(all(o in roff for o in opts), "the installed napkin.1 too")


def complete(*words):
    """COMPREPLY of the completion for the words typed so far (the last one the cursor's)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
              '_napkin_cli; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "bash", completion, cli] + list(words), capture_output=True, text=True)
    return [w for w in p.stdout.splitlines() if w]


check(set(cmds) <= set(complete("")), "completion offers every command", complete(""))
for cmd in cmds:
    check(complete(cmd[:2]) and cmd in complete(cmd[:2]), f"completion completes {cmd[:2]} to {cmd}")
    offered = set(complete(cmd, "-"))
    missing = [o for o in per_command[cmd] if o not in offered]
    check(not missing, f"completion offers every option of {cmd}", missing)

archs = [a["id"] for a in json.loads(output(cli, "archs", "--format", "json"))]
check(len(archs) >= 6 and complete("analyze", "--arch", "") == archs, "--arch completes the ids of napkin-cli archs",
      f"{complete('analyze', '--arch', '')} != {archs}")
check(complete("run", "--model=", "") == archs or complete("run", "--model", "=", "") == archs,
      "--model=ID too", complete("run", "--model", "=", ""))
check(complete("compare", "--arch", "h100,a1") == ["h100,a100"], "compare's --arch list completes after a comma",
      complete("compare", "--arch", "h100,a1"))
check(complete("analyze", "--format", "") == ["text", "json", "csv", "md"], "analyze --format's values")
check(complete("plan", "--format", "") == ["text", "json"], "plan --format's values")
check(complete("render", "--format", "") == ["svg", "pdf", "png", "tex"], "render --format's values")
check("fp8-e4m3" in complete("analyze", "--dtype", "fp8"), "--dtype's element types")
ex = os.path.join(root, "data", "examples", "flash")
check(complete("analyze", ex) == [ex + "-attention.napkin"], "FILE completes .napkin diagrams", complete("analyze", ex))

print(f"1..{n}")
sys.exit(1 if failed else 0)
