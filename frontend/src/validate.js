// Client-side validation of a whole tree, so errors show at the field as the user types:
//  1. ajv (Draft 2020-12) on the generated schemas: every field's type and limits, which components a slot
//     accepts, nested params by each component's own schema, and the rules JSON Schema states (if/then);
//  2. the rules of x-dashrag-rules, evaluated here and worded by frontend_meta's rule_messages in the page's
//     language; for a rule the schema states too (in_schema, an if/then in allOf), its message replaces ajv's
//     generic "must have required property" from the `then` branch.
// The page also asks the server (POST /trees/validate) and shows its answer at the same paths.
import Ajv2020 from 'ajv/dist/2020';
import localizeEs from 'ajv-i18n/localize/es';
import { effectiveParams } from './catalog';
import { joinText, pathText, pointerToPath } from './paths';

export function rootSchema(catalog, kind) {
  const names = catalog.components.filter((c) => c.kind === kind).map((c) => c.name);
  return {
    $id: 'https://dashrag.dev/schemas/tree.json',
    type: 'object',
    additionalProperties: false,
    required: ['component'],
    properties: { component: { enum: names }, params: { type: 'object' } },
    allOf: names.map((name) => ({
      if: { required: ['component'], properties: { component: { const: name } } },
      then: { properties: { params: { $ref: `${name}.json` } } },
    })),
  };
}

// code.optimize false: ajv's passes over the code it generates (optimizeNames, optimizeNodes) are about a third of the
// compile (every component's schema, a quarter of a second of CPU), while a tree of a few nodes validates in
// microseconds either way; what is valid and the errors are the same.
function compileValidator(catalog, kind) {
  const ajv = new Ajv2020({ allErrors: true, strict: false, messages: true, code: { optimize: false } });
  for (const schema of Object.values(catalog.schemas)) ajv.addSchema(schema);
  return ajv.compile(rootSchema(catalog, kind));
}

// The validator of trees of `kind`, an ajv validate function (its `errors` set by each call), compiled on its first
// call rather than when the page loads: a visit that never edits a tree (the query tab, the documents, the saved
// trees) never pays for the compile.
export function makeValidator(catalog, kind = 'retriever') {
  let compiled = null;
  const validate = (tree) => {
    compiled ??= compileValidator(catalog, kind);
    const valid = compiled(tree);
    validate.errors = compiled.errors;
    return valid;
  };
  return validate;
}

function schemaErrors(validateFn, tree, lang) {
  validateFn(tree);
  const errors = validateFn.errors ? [...validateFn.errors] : [];
  if (lang === 'es') localizeEs(errors);
  const found = [];
  for (const e of errors) {
    if (e.keyword === 'if' || e.keyword === 'allOf') continue; // the failing branch's own errors say it
    // a component's rule stated as if/then (its allOf): the rule's own message says it (ruleErrors); a node's
    // allOf branch holds only the $ref to its component's schema, whose errors carry that schema's paths
    if (/^#\/allOf\/\d+\/then\//.test(e.schemaPath)) continue;
    const path = pointerToPath(e.instancePath);
    if (e.keyword === 'required') path.push(e.params.missingProperty);
    if (e.keyword === 'additionalProperties') path.push(e.params.additionalProperty);
    let message = e.message;
    if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues)) {
      message = `${message}: ${e.params.allowedValues.join(', ')}`;
    }
    found.push({ path: pathText(path), message, source: 'schema' });
  }
  return found;
}

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

// One evaluator per rule kind of x-dashrag-rules; each mirrors the rule's check in the Python code and
// returns the problem as [message id, values] (the ids and templates of dashrag/core/translations.py), or
// null. A kind the page does not know is left to the server's answer.
const RULES = {
  le: (p, [a, b]) => (isNum(p[a]) && isNum(p[b]) && p[a] > p[b] ? ['le', { a, x: p[a], b, y: p[b] }] : null),
  lt: (p, [a, b]) => (isNum(p[a]) && isNum(p[b]) && p[a] >= p[b] ? ['lt', { a, x: p[a], b, y: p[b] }] : null),
  same_length: (p, [a, b]) => (Array.isArray(p[a]) && Array.isArray(p[b]) && p[a].length !== p[b].length
    ? ['same_length', { a, n: p[a].length, b, m: p[b].length }] : null),
  sliding_window: (p) => {
    if (!isNum(p.window_size) || !isNum(p.top_k)) return null;
    const stride = isNum(p.window_stride) ? p.window_stride : p.window_size - p.top_k;
    if (stride < 1) return ['sliding_window.slide', { w: p.window_size, k: p.top_k }];
    return p.top_k + stride > p.window_size ? ['sliding_window.stride', { k: p.top_k, s: stride, w: p.window_size }] : null;
  },
  non_increasing: (p, _fields, { childTopK }) => {
    for (let i = 1; i < childTopK.length; i += 1) {
      const [x, y] = [childTopK[i], childTopK[i - 1]];
      if (isNum(x) && isNum(y) && x > y) return ['non_increasing', { i, x, j: i - 1, y }];
    }
    return null;
  },
  // DashAI's rule on top of non_increasing: no stage keeps as many chunks as the one before (sequential.py)
  decreasing: (p, _fields, { childTopK }) => {
    for (let i = 1; i < childTopK.length; i += 1) {
      const [x, y] = [childTopK[i], childTopK[i - 1]];
      if (isNum(x) && isNum(y) && x === y) return ['decreasing', { i, x, j: i - 1, y }];
    }
    return null;
  },
  // "b is needed when a is <value>": the value is the const of the rule's `if` in the schema's allOf
  requires: (p, [a, b], { statement }) => {
    const value = statement?.if?.properties?.[a]?.const;
    const missing = p[b] === undefined || p[b] === null || (Array.isArray(p[b]) && p[b].length === 0);
    return value !== undefined && p[a] === value && missing ? ['requires', { a, value: String(value), b }] : null;
  },
};

export function fill(template, values) {
  return template.replace(/\{(\w+)\}/g, (whole, key) => (key in values ? String(values[key]) : whole));
}

function walk(catalog, node, path, visit) {
  if (!node || typeof node !== 'object' || !catalog.schemas[node.component]) return;
  visit(node, path);
  const schema = catalog.schemas[node.component];
  for (const [field, prop] of Object.entries(schema.properties || {})) {
    if (!prop['x-component-kind']) continue;
    const value = node.params?.[field];
    const fieldPath = joinText(joinText(path, 'params'), field);
    if (Array.isArray(value)) value.forEach((child, i) => walk(catalog, child, joinText(fieldPath, i), visit));
    else if (value && typeof value === 'object') walk(catalog, value, fieldPath, visit);
  }
}

function ruleErrors(catalog, tree, lang) {
  const found = [];
  walk(catalog, tree, '', (node, path) => {
    const schema = catalog.schemas[node.component];
    const messages = catalog.byName[node.component]?.rule_messages || {};
    const rules = schema['x-dashrag-rules'] || [];
    const statements = schema.allOf || []; // the in_schema rules' if/then, in the order of the rules
    const params = effectiveParams(catalog, node);
    const childTopK = Array.isArray(params.children) ? params.children.map((c) => effectiveParams(catalog, c).top_k) : [];
    let stated = 0;
    for (const rule of rules) {
      const statement = rule.in_schema ? statements[stated++] : undefined;
      const evaluate = RULES[rule.rule];
      const problem = evaluate ? evaluate(params, rule.fields, { childTopK, statement }) : null;
      if (!problem) continue;
      const [id, values] = problem;
      const template = messages[id] ? (messages[id][lang] || messages[id].en) : id;
      found.push({ path: joinText(joinText(path, 'params'), rule.at), message: fill(template, values), source: 'rule' });
    }
  });
  return found;
}

export function validateTree(catalog, validateFn, tree, lang) {
  if (!tree) return [];
  return [...schemaErrors(validateFn, tree, lang), ...ruleErrors(catalog, tree, lang)];
}

// Errors grouped by path text; duplicates (same path and message) kept once.
export function groupErrors(errors) {
  const byPath = {};
  for (const e of errors) {
    const list = (byPath[e.path] = byPath[e.path] || []);
    if (!list.some((x) => x.message === e.message)) list.push(e);
  }
  return byPath;
}
