#!/usr/bin/env node
// The outside check of the JSON-schema constraint engine (runtime/json_schema.h): every output of
// the random walks of verify/tests/test_json_schema.cc ([json_walk], one JSON object per line:
// vocab, seed, schema, output, complete) must parse with JSON.parse and validate against its schema
// with ajv (tools/npm, pinned by tools/npm/package-lock.json; NODE_MODULES overrides the folder).
//
//   node verify/json_schema_check.js WALKS.jsonl [MIN_LINES]
//
// {"type":"json_object"} (OpenAI's mode, not JSON Schema) is checked as {"type":"object"}.
// Before the walks, ajv itself must reject planted wrong outputs, so a broken validator cannot pass
// everything. Exit 0: all valid; 1: a failure (each named); 77: ajv is not installed (skipped).
'use strict';
const fs = require('fs');
const path = require('path');

function die(msg, code) {
  process.stderr.write('json_schema_check.js: ' + msg + '\n');
  process.exit(code === undefined ? 1 : code);
}

const NODE_MODULES = process.env.NODE_MODULES || path.join(__dirname, '..', 'tools', 'npm', 'node_modules');
const ajvDir = path.join(NODE_MODULES, 'ajv');
if (!fs.existsSync(path.join(ajvDir, 'package.json'))) {
  die('\n*** SKIPPED: ' + ajvDir + ' is not installed (run tools/setup.sh --all, or `npm ci` in tools/npm)\n', 77);
}
const Ajv = require(ajvDir).default;
const ajv = new Ajv({strict: false, allErrors: true});

const file = process.argv[2];
const minLines = Number(process.argv[3] || 1);
if (!file) die('usage: json_schema_check.js WALKS.jsonl [MIN_LINES]');

function schemaOf(s) {
  return s && s.type === 'json_object' ? {type: 'object'} : s;
}

// The validator must be able to fail.
const planted = [
  [{type: 'object', properties: {a: {type: 'integer'}}, required: ['a'], additionalProperties: false}, '{"a":1.5}'],
  [{type: 'string', maxLength: 2}, '"\ud83d\ude42ab"'],
  [{type: 'array', items: {enum: [1, 2]}, maxItems: 1}, '[1,2]'],
  [{anyOf: [{type: 'null'}, {type: 'string'}]}, '0'],
];
for (const [schema, text] of planted) {
  if (ajv.validate(schema, JSON.parse(text))) die('ajv accepted the planted invalid output ' + text);
}

const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length);
if (lines.length < minLines) die(file + ' has ' + lines.length + ' walks, expected at least ' + minLines);
let bad = 0;
const cache = new Map();
lines.forEach((line, i) => {
  const w = JSON.parse(line);
  const where = 'line ' + (i + 1) + ' (' + w.vocab + ', seed ' + w.seed + ', schema ' + JSON.stringify(w.schema) + ')';
  if (!w.complete) {
    bad++;
    process.stderr.write('FAIL ' + where + ': the walk did not complete: ' + JSON.stringify(w.output) + '\n');
    return;
  }
  let value;
  try {
    value = JSON.parse(w.output);
  } catch (e) {
    bad++;
    process.stderr.write('FAIL ' + where + ': JSON.parse: ' + e.message + ' in ' + JSON.stringify(w.output) + '\n');
    return;
  }
  const key = JSON.stringify(w.schema);
  if (!cache.has(key)) cache.set(key, ajv.compile(schemaOf(w.schema)));
  const validate = cache.get(key);
  if (!validate(value)) {
    bad++;
    process.stderr.write('FAIL ' + where + ': ' + ajv.errorsText(validate.errors) + ' in ' + w.output + '\n');
  }
});
console.log('json_schema_check.js: ' + (lines.length - bad) + ' of ' + lines.length + ' outputs parse and validate (' +
            cache.size + ' schemas)');
process.exit(bad ? 1 : 0);
