#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hostile catalogue (docs/security.md, "The hostile catalogue").

  test-hostile.py NAPKIN-CLI SOURCE-DIR [FILTER]

Runs napkin-cli on several hundred hostile inputs, as a new user would meet them in
files and profiles from others: einsum text and graph JSON to import, architecture
profiles, diagrams, files that are not files, and command-line arguments. Each case
asserts, one TAP line each:

- the exit status (0 success, 1 refused input or failed work, 2 bad usage);
- a message that names the place (a file and line, a JSON path, a profile's field,
  an option), matched by the case's pattern;
- no GLib CRITICAL or WARNING, no sanitizer report;
- nothing a terminal would act on in either stream: no C0 or C1 control but newline
  and tab, no bidi control, only UTF-8;
- nothing written or lost: the case's folder holds afterwards exactly what it held,
  byte for byte, plus the outputs the case expects (and no hidden temporary file);
- an end within the time limit (a pipe or a device must not block).

The build's ASan/UBSan run (build-aux/ci-sanitize) runs it too.
"""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

CLI, SRC = sys.argv[1], sys.argv[2]
FILTER = sys.argv[3] if len(sys.argv) > 3 else None
EXAMPLES = os.path.join(SRC, "data", "examples")
ARCHS = os.path.join(SRC, "data", "archs")
TIMEOUT = int(os.environ.get("NAPKIN_HOSTILE_TIMEOUT", "120"))

# Bytes a terminal acts on: C0 but \t and \n, DEL, C1 (as UTF-8), bidi controls,
# line and paragraph separators, the byte-order mark.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")
ESCAPES = ["\x1b]0;pwned\x07", "\x1b[2J", "\r", "\u202e", "\x07", "\x9b31m", "\u2066"]


class Case:
    def __init__(self, name, args, files=None, rc=1, place=None, outputs=(), env=None, special=None,
                 stdin=None, same=None):
        self.name = name
        self.args = args            # argv after napkin-cli; "{dir}" is the case's folder
        self.files = files or {}    # relative name → str or bytes
        self.rc = rc
        self.place = place          # a regex the output must match (None: the rc is enough, 0 only)
        self.outputs = set(outputs) # files the case may write
        self.env = env or {}
        self.special = special      # callable (folder) that makes pipes, links, sparse files
        self.stdin = stdin
        self.same = same            # a key: every case with it must print the same first reason


CASES = []


def case(*a, **k):
    CASES.append(Case(*a, **k))


def example(name):
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as f:
        return json.load(f)


def profile(name="h100"):
    with open(os.path.join(ARCHS, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def dumps(obj):
    return json.dumps(obj, ensure_ascii=False)


# ---- architecture profiles ------------------------------------------------------------
# Each hostile profile alone in NAPKIN_ARCH_DIR; archs lists the bundled ones and says
# which file it skipped and why (the field's path), exit 0. A profile that was skipped
# cannot be used: analyze --arch ITS_ID is a usage error naming the known ones.

def profile_cases():
    fields = [
        ("sms", "value"), ("clock_mhz", "value"), ("tensor_clock_mhz", "value"), ("max_threads_per_sm", "value"),
        ("max_blocks_per_sm", "value"), ("registers_per_sm", "value"), ("max_registers_per_thread", "value"),
        ("launch_overhead_s", "value"), ("sfu", "value"),
    ]
    bad_values = [("negative", -1), ("zero", 0), ("huge", 1e300), ("string", "132"), ("null", None),
                  ("array", [1]), ("object", {})]
    for field, _ in fields:
        for label, value in bad_values:
            p = profile()
            p["id"] = "evil"
            if label == "zero" and field in ("launch_overhead_s",):
                continue   # a valid figure
            p[field]["value"] = value
            case("profile/%s-%s" % (field, label), ["archs"], {"archs/evil.json": dumps(p)}, rc=0,
                 place=r"skipped architecture file: .*evil\.json: %s" % re.escape(field),
                 env={"NAPKIN_ARCH_DIR": "{dir}/archs"})
    nested = [
        ("levels.hbm.bandwidth_bytes_per_s", lambda p, v: p["levels"]["hbm"]["bandwidth_bytes_per_s"].__setitem__("value", v)),
        ("levels.smem.capacity_bytes", lambda p, v: p["levels"]["smem"]["capacity_bytes"].__setitem__("value", v)),
        ("levels.l2.bandwidth_bytes_per_clock", lambda p, v: p["levels"]["l2"]["bandwidth_bytes_per_clock"].__setitem__("value", v)),
        ("tensor.fp16", lambda p, v: p["tensor"]["fp16"].__setitem__("value", v)),
        ("cuda.fp32", lambda p, v: p["cuda"]["fp32"].__setitem__("value", v)),
        ("energy_pj_per_flop.tensor", lambda p, v: p["energy_pj_per_flop"]["tensor"].__setitem__("value", v)),
    ]
    for path, setter in nested:
        for label, value in [("negative", -5), ("string", "x"), ("huge", 1e300)]:
            p = profile()
            p["id"] = "evil"
            setter(p, value)
            case("profile/%s-%s" % (path, label), ["archs"], {"archs/evil.json": dumps(p)}, rc=0,
                 place=r"evil\.json: %s" % re.escape(path.split(".")[0]), env={"NAPKIN_ARCH_DIR": "{dir}/archs"})

    def mutate(name, change, place):
        p = profile()
        p["id"] = "evil"
        change(p)
        case("profile/" + name, ["archs"], {"archs/evil.json": dumps(p)}, rc=0,
             place=r"skipped architecture file: .*evil\.json: " + place, env={"NAPKIN_ARCH_DIR": "{dir}/archs"})
        # the id it would have had is unknown: a usage error, not a crash or a division by zero
        case("profile/%s-used" % name, ["analyze", os.path.join(EXAMPLES, "matmul.napkin"), "--arch", "evil"],
             {"archs/evil.json": dumps(p)}, rc=2, place=r"--arch: unknown architecture", env={"NAPKIN_ARCH_DIR": "{dir}/archs"})

    mutate("tensor-paths-empty", lambda p: p.__setitem__("tensor_paths", {}), r"tensor_paths")
    mutate("tensor-paths-no-mma-sync", lambda p: p["tensor_paths"].pop("mma.sync"), r"tensor_paths")
    mutate("tensor-paths-array", lambda p: p.__setitem__("tensor_paths", []), r"tensor_paths")
    mutate("tensor-path-unknown", lambda p: p["tensor_paths"].__setitem__("hmma", {}), r"tensor_paths")
    mutate("tensor-path-rows-string", lambda p: p["tensor_paths"]["wgmma"].__setitem__("rows", "64"), r"tensor_paths\.wgmma")
    mutate("tensor-path-rows-zero", lambda p: p["tensor_paths"]["wgmma"].__setitem__("rows", 0), r"tensor_paths\.wgmma")
    mutate("tensor-path-rows-huge", lambda p: p["tensor_paths"]["wgmma"].__setitem__("rows", 2 ** 40), r"tensor_paths\.wgmma")
    mutate("tensor-path-tma-string", lambda p: p["tensor_paths"]["wgmma"].__setitem__("tma", "yes"), r"tensor_paths\.wgmma")
    mutate("tensor-path-operands-empty", lambda p: p["tensor_paths"]["wgmma"].__setitem__("operands", []), r"tensor_paths\.wgmma")
    mutate("tensor-path-operands-number", lambda p: p["tensor_paths"]["wgmma"].__setitem__("operands", [16]), r"tensor_paths\.wgmma")
    mutate("tensor-path-operand-escape", lambda p: p["tensor_paths"]["wgmma"].__setitem__("operands", ["\x1b[2J"]), r"tensor_paths\.wgmma")
    mutate("tensor-path-source-missing", lambda p: p["tensor_paths"]["wgmma"].pop("source"), r"tensor_paths\.wgmma")
    mutate("tensor-path-unknown-key", lambda p: p["tensor_paths"]["wgmma"].__setitem__("rowz", 64), r"tensor_paths\.wgmma")
    mutate("tensor-path-from-unknown", lambda p: p["tensor_paths"]["wgmma"].__setitem__("a_from", "hbm"), r"tensor_paths\.wgmma")
    mutate("tmem-negative", lambda p: p["tensor_paths"]["wgmma"].__setitem__("tmem_bytes_per_sm", -1), r"tensor_paths\.wgmma")
    for label, cc in [("huge", "99999999999999999999.9"), ("shell", "99.9; rm -rf /"), ("negative", "-1.0"),
                      ("no-minor", "9"), ("letters", "nine.zero"), ("leading-zero", "09.0"), ("minor-two", "9.10"),
                      ("escape", "9.0\x1b[2J"), ("empty", ""), ("number", 9.0), ("spaces", " 9.0")]:
        mutate("cc-" + label, lambda p, cc=cc: p.__setitem__("compute_capability", cc), r"compute_capability")
    for label, ident in [("10000", "x" * 10000), ("escape", "h\x1b]0;x\x07"), ("bidi", "h100\u202e"), ("space", "h 100"),
                         ("empty", ""), ("number", 100), ("slash", "../h100"), ("dash-first", "-h100")]:
        mutate("id-" + label, lambda p, ident=ident: p.__setitem__("id", ident), r"id")
    for label, name in [("escape", "NVIDIA\x1b[31m"), ("cr", "A\rB"), ("bidi", "\u202eNVIDIA"), ("long", "N" * 500),
                        ("null", None), ("empty", "")]:
        mutate("name-" + label, lambda p, name=name: p.__setitem__("name", name), r"name")
    mutate("family-escape", lambda p: p.__setitem__("family", "hopper\x07"), r"family")
    mutate("source-escape", lambda p: p["sms"].__setitem__("source", "datasheet\x1b[2J"), r"sms")
    mutate("source-long", lambda p: p["sms"].__setitem__("source", "s" * 5000), r"sms")
    mutate("source-missing", lambda p: p["sms"].pop("source"), r"sms")
    mutate("figure-extra-key", lambda p: p["sms"].__setitem__("note", "x"), r"sms")
    mutate("unknown-field", lambda p: p.__setitem__("tensor_path", {}), r"\$: unknown field")
    mutate("unknown-level", lambda p: p["levels"].__setitem__("l3", {}), r"levels: unknown field")
    mutate("unknown-level-key", lambda p: p["levels"]["hbm"].__setitem__("latency_s", 1), r"levels\.hbm: unknown field")
    mutate("format-wrong", lambda p: p.__setitem__("format", "napkin"), r"format")
    mutate("version-2", lambda p: p.__setitem__("version", 2), r"version")
    mutate("registers-mismatch", lambda p: p["levels"]["registers"]["capacity_bytes"].__setitem__("value", 12), r"levels\.registers")
    mutate("mma-sync-over-peak", lambda p: p.__setitem__("tensor_mma_sync", {"fp16": {"value": 1e6, "source": "x"}}),
           r"tensor_mma_sync")
    mutate("interconnect-link-escape",
           lambda p: p.get("interconnect", {}).__setitem__("link", "\x1b[2J") if "interconnect" in p else p.__setitem__("interconnect", 7),
           r"interconnect")
    mutate("sources-escape", lambda p: p.__setitem__("sources", {"datasheet": "\x1b]0;x\x07"}), r"sources")

    raw = [("not-json", b"{not json", r"evil\.json: not valid JSON \(line 1"),
           ("empty", b"", r"evil\.json: not valid JSON"),
           ("nul", b'{"format": "napkin-arch"}\x00garbage', r"evil\.json: not valid JSON"),
           ("bad-utf8", b'{"format": "napkin-arch", "id": "\xff\xfe"}', r"evil\.json: id: not valid UTF-8"),
           ("array", b"[1, 2]", r"evil\.json: \$"),
           ("deep", b"[" * 100 + b"]" * 100, r"evil\.json: not valid JSON"),
           ("bom", b"\xef\xbb\xbf{}", r"evil\.json: not valid JSON")]
    for label, data, place in raw:
        case("profile/raw-" + label, ["archs"], {"archs/evil.json": data}, rc=0,
             place=r"skipped architecture file: .*" + place, env={"NAPKIN_ARCH_DIR": "{dir}/archs"})

    # not files: refused at once, never read or waited on
    def fifo(d):
        os.mkfifo(os.path.join(d, "archs", "x.json"))

    def zero(d):
        os.symlink("/dev/zero", os.path.join(d, "archs", "x.json"))

    def folder(d):
        os.mkdir(os.path.join(d, "archs", "x.json"))

    def big(d):
        with open(os.path.join(d, "archs", "x.json"), "wb") as f:
            f.truncate(2 * 1024 * 1024)

    for label, make, place in [("fifo", fifo, r"x\.json.*a pipe"), ("dev-zero", zero, r"x\.json.*a device"),
                               ("folder", folder, r"x\.json.*a folder"), ("2MiB", big, r"x\.json.*larger than")]:
        for cmd in (["archs"], ["analyze", os.path.join(EXAMPLES, "matmul.napkin")],
                    ["codegen", os.path.join(EXAMPLES, "matmul.napkin"), "--target", "pseudo"]):
            case("profile/%s-%s" % (label, cmd[0]), cmd, {"archs/.keep": ""}, rc=0, place=place,
                 env={"NAPKIN_ARCH_DIR": "{dir}/archs"}, special=make)

    # a user profile with a bundled id: named where it is used
    p = profile()
    p["levels"]["hbm"]["bandwidth_bytes_per_s"]["value"] = 1e14
    for cmd in (["analyze", os.path.join(EXAMPLES, "matmul.napkin")], ["archs"],
                ["plan", os.path.join(EXAMPLES, "matmul-tiled.napkin")], ["compare", os.path.join(EXAMPLES, "matmul.napkin")]):
        case("profile/shadow-user-%s" % cmd[0], cmd, {"data/napkin/archs/h100.json": dumps(p)}, rc=0,
             place=r"note: h100: (your|the) profile .*h100\.json, used instead of .*h100\.json",
             env={"XDG_DATA_HOME": "{dir}/data"})
        case("profile/shadow-dir-%s" % cmd[0], cmd, {"archs/h100.json": dumps(p)}, rc=0,
             place=r"note: h100: the profile .*archs/h100\.json, used instead of", env={"NAPKIN_ARCH_DIR": "{dir}/archs"})


# ---- einsum text ----------------------------------------------------------------------

def einsum_cases():
    imp = lambda: ["import", "{dir}/in.einsum", "-o", "{dir}/out.napkin"]
    bad = [
        ("empty", "", r"in\.einsum: no operations"),
        ("comments-only", "# nothing\n# here\n", r"in\.einsum: no operations"),
        ("size-zero", "a=0\nx[a] -> y = exp\n", r"line 1, column 3"),
        ("size-negative", "a=-4\nx[a] -> y = exp\n", r"line 1, column 3"),
        ("size-huge", "a=2199023255552\nx[a] -> y = exp\n", r"line 1, column 3"),
        ("size-fraction", "a=1.5\nx[a] -> y = exp\n", r"line 1, column 3"),
        ("size-word", "a=big\nx[a] -> y = exp\n", r"line 1, column 3"),
        ("size-digits", "a=" + "9" * 400 + "\nx[a] -> y = exp\n", r"line 1, column 3"),
        ("axis-twice", "a=4 a=8\nx[a] -> y = exp\n", r"line 1, column 5: axis “a” is declared twice"),
        ("axis-bad-name", "4a=4\n", r"line 1, column 1"),
        ("axis-unknown", "a=4\nx[b] -> y = exp\n", r"line 2, column 3: unknown axis “b”"),
        ("axis-listed-twice", "a=4\nx[a,a] -> y = exp\n", r"line 2, column 5: axis “a” is listed twice"),
        ("rank-9", "a=2 b=2 c=2 d=2 e=2 f=2 g=2 h=2 i=2\nx[a,b,c,d,e,f,g,h,i] -> y = exp\n", r"line 2, column \d+: more than 8 axes"),
        ("axes-1500", " ".join("a%d=2" % i for i in range(1500)) + "\nx[a0] -> y = exp\n", r"line 1, column \d+: more than 1024 axes"),
        ("axes-20k-lines", "".join("a%d=2\n" % i for i in range(20000)), r"line 1025, column 1: more than 1024 axes"),
        ("line-40k-axes", "a=2\nx[" + ",".join(["a"] * 40000) + "] -> y = exp\n", r"line 2, column 5"),
        ("result-is-operand", "a=4\nz[a] -> z = exp\n", r"line 2, column 9: “z” is both an operand and the result"),
        ("result-is-second", "a=4\nx[a] z[a] -> z = add\n", r"line 2, column 14: “z” is both an operand"),
        ("redefined", "a=4\nx[a] -> y = exp\ny -> y2 = exp\nx -> y = exp\n", r"line 4, column \d+: “y” is already defined on line 2"),
        ("einsum-abcc", "a=4 b=4 c=4\nx[a,b] y[b,c] -> z = einsum(\"ab,bc->abcc\")\n", r"line 2, column \d+: einsum letter “c” appears twice"),
        ("einsum-trace", "a=4\nx[a] y[a] -> z = einsum(\"aa,a->a\")\n", r"line 2, column \d+: einsum letter “a” appears twice"),
        ("einsum-unknown-letter", "a=4\nx[a] y[a] -> z = einsum(\"a,q->a\")\n", r"line 2, column \d+: einsum letter “q”"),
        ("einsum-no-arrow", "a=4\nx[a] y[a] -> z = einsum(\"a,a\")\n", r"line 2, column \d+: expected an einsum string"),
        ("einsum-count", "a=4\nx[a] y[a] -> z = einsum(\"a->a\")\n", r"line 2, column \d+: the einsum string has 1 operands"),
        ("einsum-one-operand", "a=4\nx[a] -> z = einsum(\"a->a\")\n", r"line 2, column \d+: einsum takes two operands"),
        ("einsum-rank-9", "a=2 b=2 c=2 d=2 e=2 f=2 g=2 h=2 i=2\nx[a] y[a] -> z = einsum(\"a,a->abcdefghi\")\n",
         r"line 2, column \d+: an einsum term of more than 8 axes"),
        ("softmax-extra-arg", "a=4\nx[a] -> y = softmax(a, b)\n", r"line 2, column 24: softmax does not take the argument “b”"),
        ("softmax-unknown-key", "a=4\nx[a] -> y = softmax(a, temperature=2)\n", r"line 2, column \d+: softmax does not take"),
        ("exp-with-arg", "a=4\nx[a] -> y = exp(3)\n", r"line 2, column \d+: exp does not take the argument “3”"),
        ("softmax-no-axis", "a=4\nx[a] -> y = softmax\n", r"line 2, column \d+: softmax needs an axis"),
        ("softmax-unknown-axis", "a=4\nx[a] -> y = softmax(q)\n", r"line 2, column \d+: unknown axis “q”"),
        ("norm-eps-zero", "a=4\nx[a] -> y = rmsnorm(a, 0)\n", r"line 2, column \d+: eps"),
        ("norm-eps-text", "a=4\nx[a] -> y = rmsnorm(a, big)\n", r"line 2, column \d+: expected a number"),
        ("scale-no-factor", "a=4\nx[a] -> y = scale\n", r"line 2, column \d+: scale needs its factor"),
        ("scale-nan", "a=4\nx[a] -> y = scale(nan)\n", r"line 2, column \d+: expected a number"),
        ("scale-inf", "a=4\nx[a] -> y = scale(1e999)\n", r"line 2, column \d+: expected a number"),
        ("cast-no-type", "a=4\nx[a] -> y = cast\n", r"line 2, column \d+: cast needs an element type"),
        ("cast-bad-type", "a=4\nx[a] -> y = cast(fp7)\n", r"line 2, column \d+: cast needs an element type"),
        ("add-one-operand", "a=4\nx[a] -> y = add\n", r"line 2, column \d+: add takes 2 operands"),
        ("three-operands", "a=4\nx[a] y[a] w[a] -> z = add\n", r"line 2, column \d+: an operation takes at most two"),
        ("unknown-op", "a=4\nx[a] -> y = frobnicate\n", r"line 2, column \d+: unknown operation “frobnicate”"),
        ("unknown-value", "a=4\nq -> y = exp\n", r"line 2, column 1: unknown value “q”"),
        ("operand-axes-differ", "a=4 b=4\nx[a] -> y = exp\ny[b] -> z = exp\n", r"line 3, column \d+: “y” has axes \[a\]"),
        ("result-axes-differ", "a=4 b=4\nx[a] -> y[b] = exp\n", r"line 2: The first input of the map “y”"),
        ("rearrange-no-axes", "a=4\nx[a] -> y = rearrange\n", r"line 2, column \d+: rearrange needs the result's axes"),
        ("mask-one-operand", "a=4\nx[a] -> y = mask\n", r"line 2, column \d+: a tensor mask takes two operands"),
        ("causal-no-axes", "a=4\nx[a] -> y = causal\n", r"line 2, column \d+: causal needs an axis"),
        ("window-offset-text", "q=4 k=4\nx[q,k] -> y = window(q, k, offset=far)\n", r"line 2, column \d+: expected a whole number"),
        ("output-unknown", "a=4\nx[a] -> y = exp\noutput nothing\n", r"line 3, column 8: unknown value “nothing”"),
        ("dtype-unknown", "dtype fp7\n", r"line 1, column 7: unknown element type"),
        ("dtype-extra", "dtype fp16 now\n", r"line 1, column 12: unexpected"),
        ("unterminated", "a=4\nx[a] y[a] -> z = einsum(\"a,a->a)\n", r"line 2, column \d+: unterminated string"),
        ("bad-char", "a=4\nx[a] -> y = exp; rm -rf /\n", r"line 2, column 16: unexpected character “;”"),
        ("trailing", "a=4\nx[a] -> y = exp exp\n", r"line 2, column \d+: unexpected “exp”"),
        ("no-arrow", "a=4\nx[a] y = exp\n", r"line 2, column \d+: expected “->”"),
        ("elements-overflow", "a=1099511627776 b=1099511627776\nx[a,b] -> y = exp\n", r"in\.einsum: line 2: Tensor “x” has more elements"),
        ("flops-overflow", "a=1099511627776 b=4194304\nx[a,b] y[b,a] -> z[a,a2] = einsum(\"ab,ba->aa\")\n", r"line 2"),
        ("nul", b"a=4\x00\nx[a] -> y = exp\n", r"in\.einsum: not UTF-8 text"),
        ("bad-utf8", b"a=4\nx[a] -> y\xff = exp\n", r"in\.einsum: not UTF-8 text \(byte \d+\)"),
        ("overlong-utf8", b"a=4\nx[a] -> \xc0\xaf = exp\n", r"in\.einsum: not UTF-8 text"),
        ("name-65", "a=4\n" + "x" * 65 + "[a] -> y = exp\n", r"line 2, column 1: “x+” is not a name"),
        ("ops-over-limit", "a=2\nx0[a] -> x1 = exp\n" + "".join("x%d -> x%d = exp\n" % (i, i + 1) for i in range(1, 100002)),
         r"line \d+, column \d+: more than 100000 operations"),
    ]
    for esc in ESCAPES:
        if esc == "\r":
            continue   # a carriage return is white space, and a CRLF line's end
        bad.append(("escape-name-%02x" % ord(esc[0]), "a=4\nx[a] -> y%s = exp\n" % esc, r"line 2, column \d+: unexpected character"))
        bad.append(("escape-op-%02x" % ord(esc[0]), "a=4\nx[a] -> y = e%sxp\n" % esc, r"line 2, column \d+: unexpected character"))
        bad.append(("escape-string-%02x" % ord(esc[0]), "a=4\nx[a] y[a] -> z = einsum(\"a,a%s->a\")\n" % esc,
                    r"line 2, column \d+: einsum letter"))
    bad.append(("cr-inside-name", "a=4\nx[a] -> y = e\rxp\n", r"line 2, column 15: unexpected “xp”"))
    for name, text, place in bad:
        case("einsum/" + name, imp(), {"in.einsum": text}, rc=1, place=r"napkin-cli import: .*in\.einsum: " + place.split("in\\.einsum: ")[-1])
    good = [
        ("crlf", "a=4\r\nx[a] -> y = exp\r\n"),
        ("bom", "\ufeffa=4\nx[a] -> y = exp\n"),
        ("attention", open(os.path.join(SRC, "tests", "import", "attention.einsum"), encoding="utf-8").read()),
        ("chain-8k", "a=64\nx0[a] -> x1 = exp\n" + "".join("x%d -> x%d = exp\n" % (i, i + 1) for i in range(1, 8000))),
        ("reserved-name", "a=4\nNone[a] -> y = exp\n"),
        ("title-escape", "a=4\nx[a] -> y = exp\n"),
    ]
    for name, text in good:
        case("einsum/ok-" + name, imp(), {"in.einsum": text}, rc=0, outputs={"out.napkin"})
    case("einsum/title-escape-arg", imp() + ["--title", "t\x1b]0;x\x07\u202e"], {"in.einsum": "a=4\nx[a] -> y = exp\n"},
         rc=0, outputs={"out.napkin"})
    case("einsum/to-dev-null", ["import", "{dir}/in.einsum", "-o", "/dev/null"], {"in.einsum": "a=4\nx[a] -> y = exp\n"},
         rc=2, place=r"-o /dev/null is not a regular file")
    case("einsum/onto-input", ["import", "{dir}/in.einsum", "-o", "{dir}/in.einsum"], {"in.einsum": "a=4\nx[a] -> y = exp\n"},
         rc=2, place=r"-o .*in\.einsum is the input")
    case("einsum/axis-override-bad", imp() + ["--axis", "a=0"], {"in.einsum": "a=4\nx[a] -> y = exp\n"}, rc=2, place=r"a=0|axis")


# ---- graph JSON -----------------------------------------------------------------------

def graph(nodes, outputs=None, **top):
    doc = {"format": "napkin-graph", "version": 1, "module": "M", "nodes": list(nodes)}
    doc["nodes"].append({"name": "output", "op": "output", "outputs": outputs if outputs is not None else [{"node": "e"}]})
    doc.update(top)
    return dumps(doc)


X = {"name": "x", "op": "placeholder", "role": "input", "shape": [4, 8], "dtype": "fp32"}


def call(name, target, args, shape=(4, 8), **more):
    n = {"name": name, "op": "call_function", "target": target, "args": args, "kwargs": {}, "shape": list(shape),
         "dtype": "fp32"}
    n.update(more)
    return n


def graph_cases():
    imp = ["import", "{dir}/in.json", "-o", "{dir}/out.napkin"]
    ex = call("e", "aten.exp.default", [{"node": "x"}])
    bad = [
        ("syntax", '{"format": "napkin-graph",', r"the graph is not valid JSON \(line 1, column \d+"),
        ("syntax-line-3", '{\n"format": "napkin-graph",\n"nodes": [,]}', r"not valid JSON \(line 3, column 11"),
        ("array-root", '[{"format": "napkin-graph"}]', r"the graph is not a JSON object"),
        ("array-root-space", '  \n [1]', r"the graph is not a JSON object"),
        ("bom-array", "\ufeff[1]", r"the graph is not a JSON object"),
        ("trailing", graph([X, ex]) + " {}", r"not valid JSON"),
        ("nan", '{"format": "napkin-graph", "version": NaN}', r"not valid JSON"),
        ("comment", '{"format": "napkin-graph" /* x */}', r"not valid JSON"),
        ("deep", '{"a": ' + "[" * 100 + "]" * 100 + "}", r"not valid JSON .*nesting too deep"),
        ("format-napkin", dumps({"format": "napkin", "version": 1}), r"format: expected “napkin-graph”.*a diagram already"),
        ("format-missing", dumps({"version": 1}), r"format: expected “napkin-graph”"),
        ("version-2", dumps({"format": "napkin-graph", "version": 2, "nodes": []}), r"version: this Napkin reads graph version 1"),
        ("version-string", dumps({"format": "napkin-graph", "version": "1", "nodes": []}), r"version"),
        ("no-nodes", dumps({"format": "napkin-graph", "version": 1}), r"the graph has no “nodes” list"),
        ("nodes-object", dumps({"format": "napkin-graph", "version": 1, "nodes": {}}), r"the graph has no “nodes” list"),
        ("node-no-name", graph([{"op": "placeholder"}]), r"node 1 of the graph has no “name” or “op”"),
        ("node-no-op", graph([{"name": "x"}]), r"node 1 of the graph has no “name” or “op”"),
        ("duplicate", graph([X, dict(X)]), r"two graph nodes are called “x”"),
        ("self-reference", graph([X, call("e", "aten.exp.default", [{"node": "e"}])]), r"graph node “e”: it reads itself"),
        ("forward-reference", graph([X, call("e", "aten.exp.default", [{"node": "f"}]), call("f", "aten.exp.default", [{"node": "x"}])]),
         r"graph node “e”: it reads “f”, which comes later"),
        ("unknown-reference", graph([X, call("e", "aten.exp.default", [{"node": "ghost"}])]), r"graph node “e”: it reads “ghost”, which is no node"),
        ("kwarg-reference", graph([X, call("e", "aten.exp.default", [], kwargs={"input": {"node": "later"}})]),
         r"graph node “e”"),
        ("output-unknown", graph([X, ex], [{"node": "nope"}]), r"the graph's outputs name “nope”"),
        ("output-no-node", graph([X, ex], [{"name": "y"}]), r"output 1 names no graph node"),
        ("no-outputs", graph([X, ex], []), r"the graph has no outputs"),
        ("no-target", graph([X, {"name": "e", "op": "call_function", "args": []}]), r"graph node “e”: a call without a “target”"),
        ("unsupported", graph([X, call("e", "aten.fft.default", [{"node": "x"}], line=7, file="m.py", code="torch.fft(x)")]),
         r"1 operation cannot be imported \(docs/import\.md\):\n  line 7 \(m\.py: torch\.fft\(x\)\): fft is outside the "
         r"covered set"),
        ("unsupported-many", graph([X] + [call("e%d" % i, "aten.fft.default", [{"node": "x"}]) for i in range(50)],
                                   [{"node": "e%d" % i} for i in range(50)]),
         r"50 operations cannot be imported .*\n  and \d+ more$"),
        ("get-attr", graph([X, {"name": "e", "op": "get_attr", "target": "w"}]),
         r"cannot be imported .*graph node “e”: get_attr is a graph node that is not a placeholder"),
        ("shape-negative", graph([dict(X, shape=[-4, 8]), ex]), r"graph node “x”|shape"),
        ("shape-zero", graph([dict(X, shape=[0, 8]), ex]), r"graph node “x”|shape"),
        ("shape-huge", graph([dict(X, shape=[2 ** 62, 8]), ex]), r"graph node “x”|shape"),
        ("shape-rank-9", graph([dict(X, shape=[2] * 9), ex]), r"graph node “x”|shape|dimensions"),
        ("shape-mismatch", graph([X, call("e", "aten.exp.default", [{"node": "x"}], shape=(8, 4))]), r"graph node “e”"),
        ("eps-zero", graph([X, call("e", "aten.rms_norm.default", [{"node": "x"}, [8], None, 0.0])]), r"graph node “e”: eps"),
        ("x-plus-xt", graph([dict(X, shape=[8, 8]), call("t", "aten.t.default", [{"node": "x"}], shape=(8, 8)),
                             call("e", "aten.add.Tensor", [{"node": "x"}, {"node": "t"}], shape=(8, 8))]),
         r"graph node “t”: t would give a result with one axis twice"),
        ("too-many-nodes", None, r"the graph has \d+ nodes; Napkin reads at most 400000"),
    ]
    for esc in ESCAPES:
        bad.append(("escape-target-%02x" % ord(esc[0]), graph([X, call("e", "aten.nope%s.default" % esc, [{"node": "x"}])]),
                    r"outside the covered set"))
        bad.append(("escape-code-%02x" % ord(esc[0]),
                    graph([X, call("e", "aten.nope.default", [{"node": "x"}], line=2, code=esc * 40, file="f%s.py" % esc)]),
                    r"cannot be imported .*\n  line 2 \(f.*: nope is outside the covered set"))
        bad.append(("escape-name-%02x" % ord(esc[0]), graph([X, call("e%s" % esc, "aten.exp.default", [{"node": "ghost"}])]),
                    r"graph node “e\\"))
    for name, text, place in bad:
        if text is None:
            nodes = [X] + [call("e%d" % i, "aten.exp.default", [{"node": "x"}]) for i in range(400000)]
            text = graph(nodes, [{"node": "e0"}])
        case("graph/" + name, imp, {"in.json": text}, rc=1, place=r"napkin-cli import: .*in\.json: .*" + place)
    for f in ("mlp-swiglu.graph.json", "llama-block.graph.json", "mixer.graph.json"):
        with open(os.path.join(SRC, "tests", "import", f), encoding="utf-8") as fh:
            case("graph/ok-" + f, imp, {"in.json": fh.read()}, rc=0, outputs={"out.napkin"})
    case("graph/ok-output-is-input", imp, {"in.json": graph([X, ex], [{"node": "x"}])}, rc=0, outputs={"out.napkin"})
    case("graph/ok-shape-string", imp, {"in.json": graph([dict(X, shape="4x8"), ex])}, rc=0, outputs={"out.napkin"})
    case("graph/ok-bom", imp, {"in.json": "\ufeff" + graph([X, ex])}, rc=0, outputs={"out.napkin"})
    case("graph/ok-module-escape", imp, {"in.json": graph([X, ex], module="M\x1b]0;x\x07\u202e", source="s\r.py")},
         rc=0, outputs={"out.napkin"})
    case("graph/ok-chain-16k", imp, {"in.json": graph([X] + [call("e" if i == 15999 else "c%d" % i, "aten.exp.default",
                                                                  [{"node": "x" if i == 0 else "c%d" % (i - 1)}])
                                                             for i in range(16000)])}, rc=0, outputs={"out.napkin"})


# ---- diagrams and files that are not files --------------------------------------------

def diagram_cases():
    bad_dir = os.path.join(SRC, "tests", "bad")
    for f in sorted(os.listdir(bad_dir)):
        if f.endswith(".napkin"):
            with open(os.path.join(bad_dir, f), "rb") as fh:
                data = fh.read()
            case("diagram/bad-" + f, ["validate", "{dir}/in.napkin"], {"in.napkin": data}, rc=1,
                 place=r"in\.napkin: invalid: (.*JSON path: |The file)")

    m = example("matmul.napkin")

    def far(x, y):
        d = json.loads(dumps(m))
        d["nodes"][0]["x"], d["nodes"][0]["y"] = x, y
        return dumps(d)

    for label, x, y, fmt in [("9e6-svg", 9e6, 0, "svg"), ("9e6-pdf", 9e6, 0, "pdf"), ("neg-9e6-svg", -9e6, 0, "svg"),
                             ("1e9-png", 1e9, 1e9, "png"), ("8000-png", 8000, 8000, "png"), ("9e6-tex", 0, 9e6, "tex")]:
        case("render/far-" + label, ["render", "{dir}/in.napkin", "-o", "{dir}/out." + fmt], {"in.napkin": far(x, y)},
             rc=1, place=r"in\.napkin: .*the farthest operation, “\w+”, is at")
    case("render/ok-near", ["render", "{dir}/in.napkin", "-o", "{dir}/out.svg"], {"in.napkin": far(100, 100)}, rc=0,
         outputs={"out.svg"})
    case("render/scale-zero", ["render", "{dir}/in.napkin", "-o", "{dir}/out.png", "--scale", "0"], {"in.napkin": far(0, 0)},
         rc=2, place=r"--scale")
    case("render/to-folder", ["render", "{dir}/in.napkin", "-o", "{dir}/sub"], {"in.napkin": far(0, 0), "sub/.keep": ""},
         rc=2, place=r"-o .*sub is not a regular file")

    d = json.loads(dumps(m))
    d["title"] = "T\x1b]0;pwned\x07\r\u202eevil"
    d["nodes"][0]["label"] = "\x1b[2J\u2066"
    titled = dumps(d)
    for cmd in (["info"], ["validate"], ["analyze"], ["plan"], ["tune"], ["compare", "--arch", "h100"],
                ["codegen", "--target", "pseudo"], ["codegen", "--target", "cuda"], ["codegen", "--target", "pytorch"]):
        case("diagram/escapes-%s" % "-".join(cmd), [cmd[0], "{dir}/in.napkin"] + cmd[1:], {"in.napkin": titled}, rc=0)

    def fifo(d_):
        os.mkfifo(os.path.join(d_, "in.napkin"))

    def zero(d_):
        os.symlink("/dev/zero", os.path.join(d_, "in.napkin"))

    def folder(d_):
        os.mkdir(os.path.join(d_, "in.napkin"))

    def sparse(d_):
        with open(os.path.join(d_, "in.napkin"), "wb") as f:
            f.truncate(64 * 1024 * 1024 + 1)

    def dangling(d_):
        os.symlink(os.path.join(d_, "nowhere"), os.path.join(d_, "in.napkin"))

    for label, make, place in [("fifo", fifo, r"a pipe, not a regular file"), ("dev-zero", zero, r"a device, not a regular file"),
                               ("folder", folder, r"it is a folder"), ("64MiB+1", sparse, r"larger than 67108864 bytes"),
                               ("dangling-link", dangling, r"could not open|No such file")]:
        for cmd in (["validate"], ["info"], ["analyze"], ["codegen"], ["import"], ["render", "-o", "{dir}/o.svg"]):
            case("file/%s-%s" % (label, cmd[0]), [cmd[0], "{dir}/in.napkin"] + cmd[1:], rc=1, place=r"in\.napkin.*(%s)" % place,
                 special=make)

    # saves: what tune --write writes loads back, and a refusal leaves the file as it was
    # fp8 halves the bytes of fp16: its best stages overflow shared memory at the file's own types
    mmt = example("matmul-tiled.napkin")
    case("tune/write-overrides-infeasible", ["tune", "{dir}/in.napkin", "--write", "--dtype", "fp8-e4m3"],
         {"in.napkin": dumps(mmt)}, rc=1,
         place=r"in\.napkin: not written: the best tiles are INFEASIBLE on h100 for the file as it is")


# ---- command-line arguments -----------------------------------------------------------

def argument_cases():
    mm = os.path.join(EXAMPLES, "matmul-tiled.napkin")
    fa = os.path.join(EXAMPLES, "flash-attention.napkin")
    for cmd in ("plan", "analyze", "codegen", "tune", "info", "validate", "compare"):
        for label, spec in [("zero", "m=0"), ("negative", "m=-1"), ("huge", "m=1099511627777"), ("unknown", "zz=4"),
                            ("no-equals", "m"), ("escape", "m\x1b[2J=4"), ("text", "m=big")]:
            case("args/%s-axis-%s" % (cmd, label), [cmd, mm, "--axis", spec], rc=2, place=r"napkin-cli %s: .*(--axis|axis)" % cmd)
    for cmd in ("plan", "analyze", "codegen"):
        for label, spec in [("unknown-region", "nope.m=64"), ("zero", "block.m=0"), ("kind", "block.m=diagonal:4"),
                            ("escape", "block.m\x07=64")]:
            case("args/%s-tile-%s" % (cmd, label), [cmd, mm, "--tile", spec], rc=2, place=r"napkin-cli %s: " % cmd)
        for label, arch in [("unknown", "h900"), ("escape", "h1\x1b]0;x\x07"), ("sm-999", "sm_999"), ("empty", "")]:
            case("args/%s-arch-%s" % (cmd, label), [cmd, mm, "--arch", arch], rc=2, place=r"napkin-cli %s: --arch" % cmd)
    for cmd in ("plan", "analyze"):
        for g in ("0", "-1", "100000"):
            case("args/%s-gpus-%s" % (cmd, g), [cmd, mm, "--gpus", g], rc=2, place=r"napkin-cli %s: --gpus" % cmd)
    for label, args, place in [
        ("unknown-command", ["frob\x1b[2Jnicate"], r"unknown command “frob\\u001b\[2Jnicate”"),
        ("format-bad", ["analyze", mm, "--format", "xml\x07"], r"--format"),
        ("tune-top-zero", ["tune", mm, "--top", "0"], r"--top"),
        ("tune-measure-negative", ["tune", mm, "--measure", "-1"], r"--measure"),
        ("codegen-target", ["codegen", mm, "--target", "fortran"], r"--target"),
        ("no-file", ["analyze"], r"expected exactly one FILE"),
    ]:
        case("args/" + label, args, rc=2, place=place)
    # plan, analyze and codegen: one verdict, one exit status, one reason
    for spec in ("block.q=whole", "block.k=parallel:1"):
        for cmd in ("plan", "analyze", "codegen"):
            case("verdict/%s-%s" % (cmd, spec), [cmd, fa, "--tile", spec], rc=1, place=r"INFEASIBLE", same=spec)
    case("verdict/tune-measure-no-gpu", ["tune", mm, "--measure", "2"], rc=1, place=r"no relabeling ran on a GPU")


# ---- running ---------------------------------------------------------------------------

def snapshot(folder):
    """Every file's bytes (symbolic links and special files by kind), hidden ones too."""
    state = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    state[rel] = hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISDIR(st.st_mode):
                state[rel] = "dir"
            else:
                state[rel] = "special %o %s" % (stat.S_IFMT(st.st_mode), os.readlink(path) if stat.S_ISLNK(st.st_mode) else "")
    return state


def run(c, folder, env):
    for rel, data in c.files.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    if c.special:
        c.special(folder)
    before = snapshot(folder)
    args = [a.replace("{dir}", folder) for a in c.args]
    case_env = dict(env)
    for k, v in c.env.items():
        case_env[k] = v.replace("{dir}", folder)
    try:
        p = subprocess.run([CLI] + args, env=case_env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return ["no end within %d s" % TIMEOUT], ""
    problems = []
    out = p.stdout + p.stderr
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append("output is not UTF-8 (%s)" % e)
        text = out.decode("utf-8", "replace")
    bad = UNSAFE.search(text)
    if bad:
        problems.append("output holds U+%04X at %d: %r" % (ord(bad.group()), bad.start(), text[max(0, bad.start() - 40):bad.start() + 20]))
    if p.returncode != c.rc:
        problems.append("exit %d, expected %d" % (p.returncode, c.rc))
    for word in ("CRITICAL", "WARNING **", "assertion", "AddressSanitizer", "runtime error:", "LeakSanitizer"):
        if word in text:
            problems.append("output holds %r" % word)
    if c.place and not re.search(c.place, text, re.S):
        problems.append("no message naming the place (/%s/)" % c.place)
    if c.rc != 0 and len(out.strip()) == 0:
        problems.append("a failure without a word")
    after = snapshot(folder)
    for rel in set(before) | set(after):
        if before.get(rel) != after.get(rel) and rel not in c.outputs:
            problems.append("%s %s" % (rel, "written" if rel not in before else "lost" if rel not in after else "changed"))
    for rel in c.outputs:
        if c.rc == 0 and rel.endswith(".napkin") and rel in after:
            v = subprocess.run([CLI, "validate", os.path.join(folder, rel)], env=case_env, capture_output=True)
            if v.returncode != 0:
                problems.append("%s was written but does not validate: %s" % (rel, v.stdout.decode(errors="replace")[:200]))
    first = next((l for l in text.splitlines() if "INFEASIBLE" in l), "")
    return problems, first.split("INFEASIBLE", 1)[-1].split(": ", 2)[-1] if first else ""


def main():
    profile_cases()
    einsum_cases()
    graph_cases()
    diagram_cases()
    argument_cases()
    cases = [c for c in CASES if FILTER is None or FILTER in c.name]
    env = dict(os.environ)
    home = tempfile.mkdtemp(prefix="napkin-hostile-home-")
    # no profile of the machine's user: a case puts its own where it means to
    env.update({"HOME": home, "XDG_DATA_HOME": os.path.join(home, "data"), "LANG": "C.UTF-8", "LANGUAGE": "",
                "G_DEBUG": "gc-friendly"})
    env.pop("NAPKIN_ARCH_DIR", None)
    print("1..%d" % (len(cases) + (1 if FILTER is None else 0)))
    failed = 0
    reasons = {}
    for i, c in enumerate(cases, 1):
        with tempfile.TemporaryDirectory(prefix="napkin-hostile-") as folder:
            problems, reason = run(c, folder, env)
        if c.same:
            reasons.setdefault(c.same, set()).add(reason)
        if problems:
            failed += 1
            print("not ok %d - %s: %s" % (i, c.name, "; ".join(problems)))
        else:
            print("ok %d - %s" % (i, c.name))
        sys.stdout.flush()
    if FILTER is None:
        split = {k: v for k, v in reasons.items() if len(v) != 1}
        ok = len(cases) >= 300 and not split
        print("%s %d - the catalogue holds %d cases (at least 300); plan, analyze and codegen give one reason: %s"
              % ("ok" if ok else "not ok", len(cases) + 1, len(cases), split or "yes"))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
