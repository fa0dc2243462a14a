#!/usr/bin/env python3
"""Writes the bad-input catalogue: tests/bad/NN-name.napkin and expected.tsv, one
line per file: the file name and the exact start of the error message (path and
text). tests/core/test-core.c loads each and asserts the message. Most cases are
one mutation of a valid example, so the rest of the file is known to be good.
Run: python3 tests/bad/make-bad.py"""
import copy, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
EX = os.path.join(HERE, '..', '..', 'data', 'examples')

def load(name):
    with open(os.path.join(EX, name)) as f:
        return json.load(f)

MM = load('matmul-tiled.napkin')
SM = load('softmax.napkin')
LN = load('layernorm.napkin')
FA = load('flash-attention.napkin')

cases = []

def raw(name, text, expect):
    cases.append((name, text.encode('utf-8') if isinstance(text, str) else text, expect))

def mut(name, base, fn, expect):
    d = copy.deepcopy(base)
    fn(d)
    raw(name, json.dumps(d, indent=1, ensure_ascii=False), expect)

def node(d, id):
    return next(n for n in d['nodes'] if n['id'] == id)

def set_(path_fn):
    return path_fn

mm_text = json.dumps(MM, indent=1)
raw('truncated', mm_text[: len(mm_text) // 2], '$: not a JSON document (line ')
raw('empty', '', '$: not a JSON document')
raw('trailing-garbage', mm_text + '\n}', '$: not a JSON document (line 129, column 1: unexpected character)')
raw('root-array', '[1, 2, 3]', '$: expected an object, found an array')
raw('deep-nesting', '{"format": "napkin", "version": 1, "axes": ' + '[' * 200 + ']' * 200 + '}',
    '$: not a JSON document')
mut('wrong-format', MM, lambda d: d.update(format='diagram'), 'format: expected "napkin", found "diagram"')
mut('missing-version', MM, lambda d: d.pop('version'), '$: missing field “version”')
mut('newer-version', MM, lambda d: d.update(version=2),
    'version: the file is format version 2; this Napkin reads up to version 1')
mut('version-string', MM, lambda d: d.update(version='1'), 'version: expected an integer, found a string')
mut('axes-object', MM, lambda d: d.update(axes={'m': 4096}), 'axes: expected an array, found an object')
mut('missing-axes', MM, lambda d: d.pop('axes'), '$: missing field “axes”')
mut('axis-size-zero', MM, lambda d: d['axes'][0].update(size=0), 'axes[0].size: 0 is out of range')
mut('axis-size-negative', MM, lambda d: d['axes'][1].update(size=-5), 'axes[1].size: -5 is out of range')
raw('axis-size-overflow', mm_text.replace('"size": 4096', '"size": 99999999999999999999', 1),
    'axes[0].size: the number does not fit in 64 bits (allowed: 1 to 1099511627776)')
mut('axis-size-too-large', MM, lambda d: d['axes'][2].update(size=2**41),
    'axes[2].size: 2199023255552 is out of range (1 to 1099511627776)')
mut('axis-size-fraction', MM, lambda d: d['axes'][0].update(size=4096.5),
    'axes[0].size: 4096.5 is not an integer')
mut('axis-size-string', MM, lambda d: d['axes'][0].update(size='4096'),
    'axes[0].size: expected an integer, found a string')
mut('axis-bad-name', MM, lambda d: d['axes'][0].update(name='m n'), 'axes[0].name: “m n” is not a name')
mut('axis-duplicate', MM, lambda d: d['axes'].append({'name': 'm', 'size': 8}),
    'axes[3]: axis “m” is defined twice')
mut('tensor-unknown-axis', MM, lambda d: d['tensors'][0].update(axes=['m', 'q']),
    'tensors[0].axes[1]: unknown axis “q”')
mut('tensor-axis-twice', MM, lambda d: d['tensors'][0].update(axes=['m', 'm']),
    'tensors[0].axes[1]: axis “m” appears twice')
mut('tensor-unknown-dtype', MM, lambda d: d['tensors'][1].update(dtype='fp64'),
    'tensors[1].dtype: unknown element type “fp64”')
mut('tensor-rank-too-high', MM,
    lambda d: (d['axes'].extend({'name': 'x%d' % i, 'size': 1} for i in range(9)),
               d['tensors'][0].update(axes=['x%d' % i for i in range(9)])),
    'tensors[0].axes: 9 axes; at most 8 are supported')
mut('tensor-overflow', MM,
    lambda d: (d['axes'].extend([{'name': 'big1', 'size': 2**40}, {'name': 'big2', 'size': 2**40}]),
               d['tensors'].append({'name': 'Huge', 'axes': ['big1', 'big2'], 'dtype': 'fp16'})),
    'tensors[3]: tensor “Huge” has more elements than 64 bits can count')
mut('node-unknown-kind', MM, lambda d: node(d, 'mm').update(kind='matmul'),
    'nodes[2].kind: unknown operation “matmul”')
mut('node-missing-id', MM, lambda d: d['nodes'][0].pop('id'), 'nodes[0]: missing field “id”')
mut('node-duplicate-id', MM, lambda d: d['nodes'][1].update(id='a'), 'nodes[1]: operation “a” is defined twice')
mut('node-label-number', MM, lambda d: d['nodes'][0].update(label=5), 'nodes[0].label: expected a string, found an integer')
mut('node-x-string', MM, lambda d: d['nodes'][0].update(x='left'), 'nodes[0].x: expected a number, found a string')
mut('input-unknown-tensor', MM, lambda d: d['nodes'][0].update(tensor='Z'), 'nodes[0].tensor: unknown tensor “Z”')
mut('contract-unknown-axis', MM, lambda d: node(d, 'mm').update(out=['x', 'n']), 'nodes[2].out[0]: unknown axis “x”')
mut('contract-missing-out', MM, lambda d: node(d, 'mm').pop('out'), 'nodes[2]: missing field “out”')
mut('softmax-missing-axis', SM, lambda d: node(d, 'sm').pop('axis'), 'nodes[1]: missing field “axis”')
mut('map-unknown-fn', LN, lambda d: node(d, 'mul').update(fn='fma'), 'nodes[4].fn: unknown value “fma”')
mut('wire-dangling-to', MM, lambda d: d['wires'][0].update(to='ghost'), 'wires[0].to: dangling wire: no operation “ghost”')
mut('wire-dangling-from', MM, lambda d: d['wires'][1].update(**{'from': 'ghost'}),
    'wires[1].from: dangling wire: no operation “ghost”')
mut('wire-port-missing', SM, lambda d: d['wires'][0].update(port=1),
    'wires[0].port: operation “sm” (softmax) has 1 input; port 1 does not exist')
mut('wire-port-twice', MM, lambda d: d['wires'].append({'from': 'b', 'to': 'mm', 'port': 0}),
    'wires[3]: input 0 of “mm” already has a wire')
mut('wire-from-output', MM, lambda d: d['wires'].append({'from': 'c', 'to': 'mm', 'port': 0}) or d['wires'].pop(0),
    'wires[2].from: “c” is an output: nothing can be wired from it')
mut('input-not-connected', MM, lambda d: d['wires'].pop(1), 'nodes[2]: input 1 of “mm” (contract) is not connected')
mut('cycle', LN,
    lambda d: ([w for w in d['wires'] if w['to'] == 'ln'][0].update(**{'from': 'add'})),
    'nodes[3]: operation “ln” is part of a cycle')
mut('contract-one-sided', MM, lambda d: d['tensors'][1].update(axes=['m', 'n']),
    'nodes[2]: contraction “mm” sums over axis k, but only input 0 carries it')
mut('output-mismatch', MM, lambda d: d['tensors'][2].update(axes=['m', 'k']),
    'nodes[3]: output “c” expects tensor C with axes [m,k], but its wire carries [m,n] fp16')
mut('reduce-axis-missing', SM, lambda d: node(d, 'sm').update(axis='r') or d['tensors'][0].update(axes=['c']) or d['tensors'][1].update(axes=['c']),
    'nodes[1]: softmax “sm” works over axis r, but its input is [c] fp16')
mut('region-unknown-node', MM, lambda d: d['regions'][0].update(nodes=['zz']), 'regions[0].nodes[0]: unknown operation “zz”')
mut('region-holds-input', MM, lambda d: d['regions'][0]['nodes'].insert(0, 'a'),
    'regions[0].nodes[0]: “a” is an input: inputs and outputs live in device memory')
mut('region-not-connected', LN, lambda d: d['regions'][0].update(nodes=['ln', 'add']),
    'regions[0]: region “rows” is not connected: “add” has no wire to “ln” through the region')
mut('region-level-hbm', MM, lambda d: d['regions'][0].update(level='hbm'),
    'regions[0]: region “block” is at hbm, where the whole diagram already lives')
mut('region-level-unknown', MM, lambda d: d['regions'][0].update(level='sram'), 'regions[0].level: unknown value “sram”')
mut('region-empty', MM, lambda d: d['regions'][0].update(nodes=[]), 'regions[0]: region “block” holds no operation')
mut('mark-unknown', MM, lambda d: d['regions'][0]['marks'].update(k={'split': 4}), 'regions[0].marks.k: unknown mark “split”')
mut('tile-zero', MM, lambda d: d['regions'][0]['marks'].update(k={'stream': 0}),
    'regions[0].marks.k.stream: tile size must be positive, found 0')
mut('tile-negative', MM, lambda d: d['regions'][0]['marks'].update(m={'parallel': -128}),
    'regions[0].marks.m.parallel: tile size must be positive, found -128')
mut('tile-larger-than-axis', MM, lambda d: d['regions'][0]['marks'].update(k={'stream': 8192}),
    'regions[0].marks.k: tile size 8192 is larger than axis k (4096)')
mut('mark-unknown-axis', MM, lambda d: d['regions'][0]['marks'].update(z={'stream': 8}), 'regions[0].marks: unknown axis “z”')
mut('mark-unused-axis', LN, lambda d: d['axes'].append({'name': 'z', 'size': 8}) or d['regions'][0]['marks'].update(z={'parallel': 2}),
    'regions[0].marks.z: no operation in region “rows” uses axis z')
mut('stream-softmax', SM, lambda d: d['regions'][0]['marks'].update(c={'stream': 1024}),
    'regions[0].marks.c: operation “sm” (softmax over c) cannot stream over c: softmax streams only when a contraction')
mut('stream-layernorm', LN, lambda d: d['regions'][0]['marks'].update(h={'stream': 512}),
    'regions[0].marks.h: operation “ln” (layernorm over h) cannot stream over h')
mut('stream-softmax-outside', FA, lambda d: d['regions'][0].update(nodes=['qk', 'scale', 'sm']),
    'regions[0].marks.k: operation “sm” (softmax over k) cannot stream over k')
mut('regions-overlap', LN, lambda d: d['regions'].extend([{'name': 'r2', 'level': 'registers', 'nodes': ['mul', 'add'], 'marks': {}}]) or d['regions'][0].update(nodes=['ln', 'mul']),
    'regions[1]: regions “rows” and “r2” overlap without one containing the other')
mut('nested-slower', MM, lambda d: d['regions'].append({'name': 'outer', 'level': 'l2', 'nodes': ['mm'], 'marks': {}}) or d['regions'][0].update(level='l2'),
    'regions[1]: regions “block” and “outer” hold the same operations at the same level')
mut('nested-wrong-order', LN, lambda d: d['regions'].append({'name': 'inner', 'level': 'l2', 'nodes': ['mul'], 'marks': {}}),
    'regions[1]: region “inner” (l2) lies inside “rows” (smem): an inner region must be at a faster level')
mut('region-duplicate', MM, lambda d: d['regions'].append(copy.deepcopy(d['regions'][0])),
    'regions[1]: region “block” is defined twice')
mut('stages-zero', MM, lambda d: d['regions'][0].update(stages=0), 'regions[0].stages: 0 is out of range (1 to 8)')
mut('rect-short', MM, lambda d: d['regions'][0].update(rect=[0, 0, 10]), 'regions[0].rect: expected [x, y, width, height]')
mut('cast-without-dtype', LN, lambda d: node(d, 'mul').update(fn='cast') or [w for w in d['wires'] if w['to'] == 'mul' and w['port'] == 1][0].update(port=0, to='mul') ,
    'wires[2]: input 0 of “mul” already has a wire')
mut('contract-dtype-mismatch', MM, lambda d: d['tensors'][1].update(dtype='fp8-e4m3'),
    'nodes[2]: contraction “mm” multiplies fp16 by fp8-e4m3')
raw('label-not-utf8', mm_text.replace('"label": "A"', '"label": "A\udcff"', 1).encode('utf-8', 'surrogateescape'),
    'nodes[0].label: not valid UTF-8 text')
mut('eps-out-of-range', LN, lambda d: node(d, 'ln').update(eps=2), 'nodes[3].eps: eps must be between 0 and 1')
mut('view-zoom-zero', MM, lambda d: d['view'].update(zoom=0), 'view.zoom: zoom must be from 0.01 to 100')
mut('no-nodes', MM, lambda d: d.update(nodes=[], wires=[], regions=[]), 'nodes: the diagram has no operations')

if __name__ == '__main__':
    for f in os.listdir(HERE):
        if f.endswith('.napkin'):
            os.remove(os.path.join(HERE, f))
    with open(os.path.join(HERE, 'expected.tsv'), 'w') as tsv:
        tsv.write('# file\texpected start of the error message (path: text)\n')
        for i, (name, data, expect) in enumerate(cases, 1):
            fn = '%02d-%s.napkin' % (i, name)
            with open(os.path.join(HERE, fn), 'wb') as f:
                f.write(data)
            tsv.write('%s\t%s\n' % (fn, expect))
    print('wrote', len(cases), 'bad inputs')
