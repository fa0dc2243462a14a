#!/usr/bin/env python3
"""Writes the bad-input catalogue: tests/bad/NN-name.napkin and expected.tsv, one
line per file: the file name, the exact start of the error message's words and
the JSON path of its details line (- for none). tests/core/test-core.c loads each
and asserts the message. Most cases are one mutation of a valid example, so the rest of the file is known to be good.
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
GA = load('attention-causal-gqa.napkin')

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
raw('truncated', mm_text[: len(mm_text) // 2], 'The file is not a Napkin diagram: it is not valid JSON (line 53, column 11: unexpected end of data)\t-')
raw('empty', '', 'The file is not a Napkin diagram: it is not valid JSON (line 1, column 1: unexpected end of data)\t-')
raw('trailing-garbage', mm_text + '\n}', 'The file is not a Napkin diagram: it is not valid JSON (line 129, column 1: unexpected character)\t-')
raw('root-array', '[1, 2, 3]', 'The file: expected an object, found an array\t-')
raw('deep-nesting', '{"format": "napkin", "version": 1, "axes": ' + '[' * 200 + ']' * 200 + '}',
    'The file is not a Napkin diagram: it is not valid JSON (line 1, column 107: nesting too deep)\t-')
mut('wrong-format', MM, lambda d: d.update(format='diagram'), 'The file’s “format” field: expected "napkin", found "diagram"\tformat')
mut('missing-version', MM, lambda d: d.pop('version'), 'The file: missing field “version”\t-')
mut('newer-version', MM, lambda d: d.update(version=2),
    'The file’s format version: the file is format version 2; this Napkin reads up to version 1\tversion')
mut('version-string', MM, lambda d: d.update(version='1'), 'The file’s format version: expected an integer, found a string\tversion')
mut('axes-object', MM, lambda d: d.update(axes={'m': 4096}), 'The list of axes: expected an array, found an object\taxes')
mut('missing-axes', MM, lambda d: d.pop('axes'), 'The file: missing field “axes”\t-')
mut('axis-size-zero', MM, lambda d: d['axes'][0].update(size=0), 'The size of axis “m”: 0 is out of range (1 to 1099511627776)\taxes[0].size')
mut('axis-size-negative', MM, lambda d: d['axes'][1].update(size=-5), 'The size of axis “n”: -5 is out of range (1 to 1099511627776)\taxes[1].size')
raw('axis-size-overflow', mm_text.replace('"size": 4096', '"size": 99999999999999999999', 1),
    'The size of axis “m”: the number does not fit in 64 bits (allowed: 1 to 1099511627776)\taxes[0].size')
mut('axis-size-too-large', MM, lambda d: d['axes'][2].update(size=2**41),
    'The size of axis “k”: 2199023255552 is out of range (1 to 1099511627776)\taxes[2].size')
mut('axis-size-fraction', MM, lambda d: d['axes'][0].update(size=4096.5),
    'The size of axis “m”: 4096.5 is not an integer from 1 to 1099511627776\taxes[0].size')
mut('axis-size-string', MM, lambda d: d['axes'][0].update(size='4096'),
    'The size of axis “m”: expected an integer, found a string\taxes[0].size')
mut('axis-bad-name', MM, lambda d: d['axes'][0].update(name='m n'), 'The name of axis “m n”: “m n” is not a name: use letters, digits and _, starting with a letter or _, at most 64 characters\taxes[0].name')
mut('axis-duplicate', MM, lambda d: d['axes'].append({'name': 'm', 'size': 8}),
    'Axis “m”: an earlier axis is also called “m”\taxes[3]')
mut('tensor-unknown-axis', MM, lambda d: d['tensors'][0].update(axes=['m', 'q']),
    'The second axis of tensor “A”: unknown axis “q”\ttensors[0].axes[1]')
mut('tensor-axis-twice', MM, lambda d: d['tensors'][0].update(axes=['m', 'm']),
    'The second axis of tensor “A”: axis “m” appears twice\ttensors[0].axes[1]')
mut('tensor-unknown-dtype', MM, lambda d: d['tensors'][1].update(dtype='fp64'),
    'The element type of tensor “B”: unknown element type “fp64” (fp32, tf32, fp16, bf16, fp8-e4m3, fp8-e5m2, int8)\ttensors[1].dtype')
mut('tensor-rank-too-high', MM,
    lambda d: (d['axes'].extend({'name': 'x%d' % i, 'size': 1} for i in range(9)),
               d['tensors'][0].update(axes=['x%d' % i for i in range(9)])),
    'The axes of tensor “A”: 9 axes; at most 8 are supported\ttensors[0].axes')
mut('tensor-overflow', MM,
    lambda d: (d['axes'].extend([{'name': 'big1', 'size': 2**40}, {'name': 'big2', 'size': 2**40}]),
               d['tensors'].append({'name': 'Huge', 'axes': ['big1', 'big2'], 'dtype': 'fp16'})),
    'Tensor “Huge” has more elements than 64 bits can count\ttensors[3]')
mut('node-unknown-kind', MM, lambda d: node(d, 'mm').update(kind='matmul'),
    'The kind of the operation “mm”: unknown operation “matmul” (input, output, contract, map, reduce, softmax, normalize, rearrange, mask)\tnodes[2].kind')
mut('node-missing-id', MM, lambda d: d['nodes'][0].pop('id'), 'The first operation: missing field “id”\tnodes[0]')
mut('node-duplicate-id', MM, lambda d: d['nodes'][1].update(id='a'), 'The input “a”: an earlier operation is also called “a”\tnodes[1]')
mut('node-label-number', MM, lambda d: d['nodes'][0].update(label=5), 'The label of the input “a”: expected a string, found an integer\tnodes[0].label')
mut('node-x-string', MM, lambda d: d['nodes'][0].update(x='left'), 'The position of the input “a”: expected a number, found a string\tnodes[0].x')
mut('input-unknown-tensor', MM, lambda d: d['nodes'][0].update(tensor='Z'), 'The tensor of the input “a”: unknown tensor “Z”\tnodes[0].tensor')
mut('contract-unknown-axis', MM, lambda d: node(d, 'mm').update(out=['x', 'n']), 'The first output axis of the contraction “mm”: unknown axis “x”\tnodes[2].out[0]')
mut('contract-missing-out', MM, lambda d: node(d, 'mm').pop('out'), 'The contraction “mm”: missing field “out”\tnodes[2]')
mut('softmax-missing-axis', SM, lambda d: node(d, 'sm').pop('axis'), 'The softmax “sm”: missing field “axis”\tnodes[1]')
mut('map-unknown-fn', LN, lambda d: node(d, 'mul').update(fn='fma'), 'The function of the map “mul”: unknown value “fma” (add, sub, mul, div, max, min, scale, exp, neg, relu, gelu, silu, sigmoid, tanh, square, sqrt, rsqrt, cast, gelu_tanh, shift, step, erf, log, elu, reciprocal)\tnodes[4].fn')
mut('wire-dangling-to', MM, lambda d: d['wires'][0].update(to='ghost'), 'The end of the wire from “a” to “ghost”: dangling wire: no operation “ghost”\twires[0].to')
mut('wire-dangling-from', MM, lambda d: d['wires'][1].update(**{'from': 'ghost'}),
    'The start of the wire from “ghost” to “mm”: dangling wire: no operation “ghost”\twires[1].from')
mut('wire-port-missing', SM, lambda d: d['wires'][0].update(port=1),
    'The input number of the wire from “x” to “sm”: the softmax “sm” has 1 input: it has no second input (port 1)\twires[0].port')
mut('wire-port-twice', MM, lambda d: d['wires'].append({'from': 'b', 'to': 'mm', 'port': 0}),
    'The wire from “b” to “mm”: the first input of “mm” already has a wire\twires[3]')
mut('wire-from-output', MM, lambda d: d['wires'].append({'from': 'c', 'to': 'mm', 'port': 0}) or d['wires'].pop(0),
    'The start of the wire from “c” to “mm”: “c” is an output: nothing can be wired from it\twires[2].from')
mut('input-not-connected', MM, lambda d: d['wires'].pop(1), 'The second input of the contraction “mm” is not connected\tnodes[2]')
mut('cycle', LN,
    lambda d: ([w for w in d['wires'] if w['to'] == 'ln'][0].update(**{'from': 'add'})),
    'The normalization “ln” is part of a cycle: a diagram flows one way\tnodes[3]')
mut('contract-one-sided', MM, lambda d: d['tensors'][1].update(axes=['m', 'n']),
    'The contraction “mm” sums over axis k, but only its first input carries it; a contraction sums over axes both inputs share (use a reduce first)\tnodes[2]')
mut('output-mismatch', MM, lambda d: d['tensors'][2].update(axes=['m', 'k']),
    'The output “c” expects tensor C with axes [m,k], but its wire carries [m,n] fp16\tnodes[3]')
mut('reduce-axis-missing', SM, lambda d: node(d, 'sm').update(axis='r') or d['tensors'][0].update(axes=['c']) or d['tensors'][1].update(axes=['c']),
    'The softmax “sm” works over axis r, but its input is [c] fp16\tnodes[1]')
mut('region-unknown-node', MM, lambda d: d['regions'][0].update(nodes=['zz']), 'The first operation of region “block”: unknown operation “zz”\tregions[0].nodes[0]')
mut('region-holds-input', MM, lambda d: d['regions'][0]['nodes'].insert(0, 'a'),
    'Region “block” holds “a”, an input: inputs and outputs live in device memory, outside every region\tregions[0].nodes[0]')
mut('region-not-connected', LN, lambda d: d['regions'][0].update(nodes=['ln', 'add']),
    'Region “rows” is not connected: “add” has no wire to “ln” through the region\tregions[0]')
mut('region-level-hbm', MM, lambda d: d['regions'][0].update(level='hbm'),
    'Region “block” is at hbm, where the whole diagram already lives; choose l2, smem or registers\tregions[0]')
mut('region-level-unknown', MM, lambda d: d['regions'][0].update(level='sram'), 'The level of region “block”: unknown value “sram” (l2, smem, registers, gpus)\tregions[0].level')
mut('region-empty', MM, lambda d: d['regions'][0].update(nodes=[]), 'Region “block” holds no operation\tregions[0]')
mut('mark-unknown', MM, lambda d: d['regions'][0]['marks'].update(k={'split': 4}), 'The mark on axis k in region “block”: unknown mark “split” (parallel, stream)\tregions[0].marks.k')
mut('tile-zero', MM, lambda d: d['regions'][0]['marks'].update(k={'stream': 0}),
    'The mark on axis k in region “block”: tile size must be positive, found 0\tregions[0].marks.k.stream')
mut('tile-negative', MM, lambda d: d['regions'][0]['marks'].update(m={'parallel': -128}),
    'The mark on axis m in region “block”: tile size must be positive, found -128\tregions[0].marks.m.parallel')
mut('tile-larger-than-axis', MM, lambda d: d['regions'][0]['marks'].update(k={'stream': 8192}),
    'In region “block”, tile size 8192 is larger than axis k (4096)\tregions[0].marks.k')
mut('mark-unknown-axis', MM, lambda d: d['regions'][0]['marks'].update(z={'stream': 8}), 'The axis marks of region “block”: unknown axis “z”\tregions[0].marks')
mut('mark-unused-axis', LN, lambda d: d['axes'].append({'name': 'z', 'size': 8}) or d['regions'][0]['marks'].update(z={'parallel': 2}),
    'No operation in region “rows” uses axis z\tregions[0].marks.z')
mut('stream-softmax', SM, lambda d: d['regions'][0]['marks'].update(c={'stream': 1024}),
    'In region “rows”, operation “sm” (softmax over c) cannot stream over c: softmax streams only when a contraction over c in the same region consumes it (online softmax)\tregions[0].marks.c')
mut('stream-layernorm', LN, lambda d: d['regions'][0]['marks'].update(h={'stream': 512}),
    'In region “rows”, operation “ln” (layernorm over h) cannot stream over h: it needs the statistics of the whole axis before it writes any element; mark h whole or parallel\tregions[0].marks.h')
mut('stream-softmax-outside', FA, lambda d: d['regions'][0].update(nodes=['qk', 'scale', 'sm']),
    'In region “block”, operation “sm” (softmax over k) cannot stream over k: softmax streams only when a contraction over k in the same region consumes it (online softmax)\tregions[0].marks.k')
mut('regions-overlap', LN, lambda d: d['regions'].extend([{'name': 'r2', 'level': 'registers', 'nodes': ['mul', 'add'], 'marks': {}}]) or d['regions'][0].update(nodes=['ln', 'mul']),
    'Regions “rows” and “r2” overlap without one containing the other\tregions[1]')
mut('nested-slower', MM, lambda d: d['regions'].append({'name': 'outer', 'level': 'l2', 'nodes': ['mm'], 'marks': {}}) or d['regions'][0].update(level='l2'),
    'Regions “block” and “outer” hold the same operations at the same level\tregions[1]')
mut('nested-wrong-order', LN, lambda d: d['regions'].append({'name': 'inner', 'level': 'l2', 'nodes': ['mul'], 'marks': {}}),
    'Region “inner” (l2) lies inside “rows” (smem): an inner region must be at a faster level\tregions[1]')
mut('region-duplicate', MM, lambda d: d['regions'].append(copy.deepcopy(d['regions'][0])),
    'Region “block”: an earlier region is also called “block”\tregions[1]')
mut('stages-zero', MM, lambda d: d['regions'][0].update(stages=0), 'The pipeline stages of region “block”: 0 is out of range (1 to 8)\tregions[0].stages')
mut('rect-short', MM, lambda d: d['regions'][0].update(rect=[0, 0, 10]), 'The rectangle of region “block”: expected [x, y, width, height]\tregions[0].rect')
mut('cast-without-dtype', LN, lambda d: node(d, 'mul').update(fn='cast') or [w for w in d['wires'] if w['to'] == 'mul' and w['port'] == 1][0].update(port=0, to='mul') ,
    'The wire from “g” to “mul”: the first input of “mul” already has a wire\twires[2]')
mut('contract-dtype-mismatch', MM, lambda d: d['tensors'][1].update(dtype='fp8-e4m3'),
    'The contraction “mm” multiplies fp16 by fp8-e4m3: cast one input so both have one element type\tnodes[2]')
raw('label-not-utf8', mm_text.replace('"label": "A"', '"label": "A\udcff"', 1).encode('utf-8', 'surrogateescape'),
    'The label of the input “a”: not valid UTF-8 text\tnodes[0].label')
mut('eps-out-of-range', LN, lambda d: node(d, 'ln').update(eps=2), 'The eps of the normalization “ln”: eps must be between 0 and 1\tnodes[3].eps')
mut('view-zoom-zero', MM, lambda d: d['view'].update(zoom=0), 'The saved zoom: zoom must be from 0.01 to 100\tview.zoom')
mut('no-nodes', MM, lambda d: d.update(nodes=[], wires=[], regions=[]), 'The diagram has no operations\tnodes')

def tensor_mask(d, axes):
    d['tensors'].append({'name': 'M', 'axes': axes, 'dtype': 'fp16'})
    d['nodes'].append({'id': 'm_in', 'kind': 'input', 'tensor': 'M', 'x': 375, 'y': 300})
    d['wires'].append({'from': 'm_in', 'to': 'mask', 'port': 1})
    node(d, 'mask').update(mask='tensor')
    for k in ('axis', 'rows'):
        node(d, 'mask').pop(k)
mut('mask-unknown', GA, lambda d: node(d, 'mask').update(mask='triangle'), 'The “mask” field of the mask “mask”: unknown value “triangle” (causal, window, tensor)\tnodes[5].mask')
mut('mask-missing-axis', GA, lambda d: node(d, 'mask').pop('axis'), 'The mask “mask”: missing field “axis”\tnodes[5]')
mut('mask-rows-is-axis', GA, lambda d: node(d, 'mask').update(rows='k'), 'The mask “mask” has rows = axis = k: rows names the query axis, axis the key axis\tnodes[5]')
mut('mask-rows-not-in-scores', GA, lambda d: node(d, 'mask').update(rows='d'), 'The mask “mask” keeps keys along axis (k) per row of axis rows (d), but its input is [b,h,g,q,k] fp16\tnodes[5]')
mut('mask-window-negative', GA, lambda d: node(d, 'mask').update(mask='window', left=-5), 'The “left” field of the mask “mask”: a window side is a number of keys (0 or more), or -1 for no bound; found -5\tnodes[5].left')
mut('mask-tensor-axes', GA, lambda d: tensor_mask(d, ['q', 'd']), 'The mask “mask” reads a mask tensor with an axis the scores lack; its axes must be a subset of its first input\'s (it is broadcast over the rest)\tnodes[5]')

if __name__ == '__main__':
    for f in os.listdir(HERE):
        if f.endswith('.napkin'):
            os.remove(os.path.join(HERE, f))
    with open(os.path.join(HERE, 'expected.tsv'), 'w') as tsv:
        tsv.write('# file\texpected start of the error message (its words)\tJSON path of the details line (- for none)\n')
        for i, (name, data, expect) in enumerate(cases, 1):
            fn = '%02d-%s.napkin' % (i, name)
            with open(os.path.join(HERE, fn), 'wb') as f:
                f.write(data)
            tsv.write('%s\t%s\n' % (fn, expect))
    print('wrote', len(cases), 'bad inputs')
