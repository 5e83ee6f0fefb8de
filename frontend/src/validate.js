// Client-side validation of a whole tree, so errors show at the field as the user types:
//  1. ajv (Draft 2020-12) on the generated schemas: every field's type and limits, which components a slot
//     accepts, nested params by each component's own schema, and the rules JSON Schema states (if/then);
//  2. the rules JSON Schema cannot state (x-dashrag-rules without in_schema), evaluated here;
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

export function makeValidator(catalog, kind = 'retriever') {
  const ajv = new Ajv2020({ allErrors: true, strict: false, messages: true });
  for (const schema of Object.values(catalog.schemas)) ajv.addSchema(schema);
  return ajv.compile(rootSchema(catalog, kind));
}

function schemaErrors(validateFn, tree, lang) {
  validateFn(tree);
  const errors = validateFn.errors ? [...validateFn.errors] : [];
  if (lang === 'es') localizeEs(errors);
  const found = [];
  for (const e of errors) {
    if (e.keyword === 'if' || e.keyword === 'allOf') continue; // the failing branch's own errors say it
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

const RULE_TEXT = {
  en: {
    le: (a, x, b, y) => `${a} (${x}) must be <= ${b} (${y})`,
    lt: (a, x, b, y) => `${a} (${x}) must be < ${b} (${y})`,
    same_length: (a, n, b, m) => `${a} has ${n} entries but there are ${m} ${b}`,
    window: (k, s, w) => `top_k (${k}) + window_stride (${s}) must be <= window_size (${w})`,
    slide: (w, k) => `window_size (${w}) must exceed top_k (${k}) for the window to slide`,
    grow: (i, x, y) => `children[${i}].params.top_k (${x}) is larger than children[${i - 1}].params.top_k (${y}): a cascade cannot grow`,
  },
  es: {
    le: (a, x, b, y) => `${a} (${x}) debe ser <= ${b} (${y})`,
    lt: (a, x, b, y) => `${a} (${x}) debe ser < ${b} (${y})`,
    same_length: (a, n, b, m) => `${a} tiene ${n} entradas pero hay ${m} ${b}`,
    window: (k, s, w) => `top_k (${k}) + window_stride (${s}) debe ser <= window_size (${w})`,
    slide: (w, k) => `window_size (${w}) debe superar top_k (${k}) para que la ventana avance`,
    grow: (i, x, y) => `children[${i}].params.top_k (${x}) es mayor que children[${i - 1}].params.top_k (${y}): una cascada no puede crecer`,
  },
};

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

// One evaluator per rule kind of x-dashrag-rules; each mirrors the rule's check in the Python code and
// returns the problem or null. A kind the page does not know is left to the server's answer.
const RULES = {
  le: (p, [a, b], text) => (isNum(p[a]) && isNum(p[b]) && p[a] > p[b] ? text.le(a, p[a], b, p[b]) : null),
  lt: (p, [a, b], text) => (isNum(p[a]) && isNum(p[b]) && p[a] >= p[b] ? text.lt(a, p[a], b, p[b]) : null),
  same_length: (p, [a, b], text) => (Array.isArray(p[a]) && Array.isArray(p[b]) && p[a].length !== p[b].length
    ? text.same_length(a, p[a].length, b, p[b].length) : null),
  sliding_window: (p, _fields, text) => {
    if (!isNum(p.window_size) || !isNum(p.top_k)) return null;
    const stride = isNum(p.window_stride) ? p.window_stride : p.window_size - p.top_k;
    if (stride < 1) return text.slide(p.window_size, p.top_k);
    return p.top_k + stride > p.window_size ? text.window(p.top_k, stride, p.window_size) : null;
  },
  non_increasing: (p, _fields, text, childTopK) => {
    const sizes = childTopK;
    for (let i = 1; i < sizes.length; i += 1) {
      if (isNum(sizes[i]) && isNum(sizes[i - 1]) && sizes[i] > sizes[i - 1]) return text.grow(i, sizes[i], sizes[i - 1]);
    }
    return null;
  },
};

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
  const text = RULE_TEXT[lang] || RULE_TEXT.en;
  const found = [];
  walk(catalog, tree, '', (node, path) => {
    const rules = catalog.schemas[node.component]['x-dashrag-rules'] || [];
    const params = effectiveParams(catalog, node);
    for (const rule of rules) {
      const evaluate = RULES[rule.rule];
      if (rule.in_schema || !evaluate) continue;
      const childTopK = Array.isArray(params.children)
        ? params.children.map((c) => effectiveParams(catalog, c).top_k) : [];
      const message = evaluate(params, rule.fields, text, childTopK);
      if (message) found.push({ path: joinText(joinText(path, 'params'), rule.at), message, source: 'rule' });
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
