#!/usr/bin/env python3
"""The JSON Schema and the loader agree (docs/decisions.md, "The file format's JSON
Schema"): every field the loader knows, in every object, is a property of the schema's
object there and the other way round; every name the schema's enums allow is a name the
loader's tables spell; `napkin-cli validate` applies the schema it finds in the data
folder (a stricter copy makes a valid example fail, with the rule and the place); and,
where python3-jsonschema is installed, the schema is valid draft 2020-12 and every
example matches it. TAP. Usage: test-schema-agreement.py NAPKIN_CLI"""
import json, os, re, shutil, subprocess, sys, tempfile

cli = sys.argv[1]
src = os.environ['NAPKIN_SOURCE_DIR']
schema = json.load(open(os.path.join(src, 'data', 'napkin.schema.json'), encoding='utf-8'))
loader = open(os.path.join(src, 'src', 'core', 'napkin-file.c'), encoding='utf-8').read()
types = open(os.path.join(src, 'src', 'core', 'napkin-types.c'), encoding='utf-8').read()
results = []


def check(name, ok, detail=''):
    results.append((name, ok, detail))


def known_in(function, table='known'):
    """The known[] field list of a loader function (or another table of it)."""
    body = loader[loader.index('\n' + function + ' ('):]
    m = re.search(r'static const char \*' + table + r'\[\] = \{(.*?)NULL,?\s*\}', body, re.S)
    return set(re.findall(r'"([a-z_]+)"', m.group(1)))


props = schema['properties']
places = {
    'napkin_diagram_load_from_data': ('the root', props),
    'load_axes': ('axes[]', props['axes']['items']['properties']),
    'load_tensors': ('tensors[]', props['tensors']['items']['properties']),
    'load_nodes': ('nodes[]', props['nodes']['items']['properties']),
    'load_wires': ('wires[]', props['wires']['items']['properties']),
    'load_regions': ('regions[]', props['regions']['items']['properties']),
    'load_view': ('view', props['view']['properties']),
}
for function, (where, properties) in places.items():
    known = known_in(function)
    if function == 'load_regions':
        # a gpus region's own fields (docs/multi-gpu.md) are in a table of their own
        known |= known_in(function, 'gpus_known')
    # runs: an unknown root field to the loader, kept as it is (docs/file-format.md, "Runs")
    described = set(properties) - ({'runs'} if where == 'the root' else set())
    check(f'{where}: the loader\'s fields are the schema\'s', known == described,
          f'only the loader: {sorted(known - described)}, only the schema: {sorted(described - known)}')
check('the test read every loader object', sum(len(known_in(f)) for f in places) >= 40)


def enums(node, path='#'):
    if isinstance(node, dict):
        if 'enum' in node:
            yield path, node['enum']
        for k, v in node.items():
            yield from enums(v, f'{path}/{k}')
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from enums(v, f'{path}/{i}')


n_enums = 0
for path, values in enums(schema):
    n_enums += 1
    # "gpus" is the loader's own level word (a gpus region is not a memory level)
    missing = [v for v in values if f'"{v}"' not in types and f'"{v}"' not in loader]
    check(f'{path}: every value is a name in src/core/napkin-types.c or the loader', not missing, f'missing: {missing}')
check('the schema has its enums', n_enums >= 7, f'{n_enums}')

# validate applies the schema of the data folder
examples = os.path.join(src, 'data', 'examples')
p = subprocess.run([cli, 'validate', '--format', 'json'] + sorted(
    os.path.join(examples, f) for f in os.listdir(examples) if f.endswith('.napkin')), capture_output=True, text=True)
check('validate: every example is valid with the schema', p.returncode == 0 and json.loads(p.stdout)['valid'],
      p.stdout[-400:] + p.stderr[-400:])
check('validate: the schema was found', 'without the JSON Schema' not in p.stderr, p.stderr[-400:])
with tempfile.TemporaryDirectory() as tmp:
    strict = json.loads(json.dumps(schema))
    strict['properties']['title']['maxLength'] = 3
    json.dump(strict, open(os.path.join(tmp, 'napkin.schema.json'), 'w'))
    shutil.copytree(os.path.join(src, 'data', 'archs'), os.path.join(tmp, 'archs'))
    env = dict(os.environ, NAPKIN_DATA_DIR=tmp)
    p = subprocess.run([cli, 'validate', '--format', 'json', os.path.join(examples, 'matmul.napkin')],
                       capture_output=True, text=True, env=env)
    try:
        f = json.loads(p.stdout)['files'][0]
        e = f['error']
        ok = (p.returncode == 1 and not f['valid'] and e['kind'] == 'schema' and e['json_path'] == 'title'
              and e['message'].startswith("Against the file format's schema, rule #/properties/title/maxLength: "))
    except (ValueError, KeyError, IndexError) as x:
        ok, e = False, x
    check('validate: a stricter schema in the data folder fails a valid example, naming the rule', ok,
          f'{p.returncode} {e}')
    p = subprocess.run([cli, 'validate', os.path.join(examples, 'matmul.napkin')], capture_output=True, text=True,
                       env=env)
    check('validate: the text says the rule and the place', p.returncode == 1 and
          'rule #/properties/title/maxLength: 6 characters; at most 3 are allowed (JSON path: title)' in p.stdout,
          p.stdout + p.stderr)

try:
    import jsonschema
except ImportError:
    jsonschema = None
if jsonschema is None:
    print('# python3-jsonschema is not installed: the cross-check with it is skipped')
else:
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    bad = [f for f in os.listdir(examples) if f.endswith('.napkin')
           and list(v.iter_errors(json.load(open(os.path.join(examples, f), encoding='utf-8'))))]
    check('python-jsonschema: the schema is draft 2020-12 and every example matches it', not bad, f'{bad}')

print(f'1..{len(results)}')
for i, (name, ok, detail) in enumerate(results, 1):
    print(f'{"ok" if ok else "not ok"} {i} - {name}')
    if not ok:
        print('# ' + str(detail).replace('\n', '\n# '))
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
