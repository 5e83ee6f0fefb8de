// What the page knows about the components: GET /components (frontend_meta) and GET /schemas (the generated
// JSON Schemas, every component's in one answer). Everything the forms show comes from these two answers.

// The icon names of frontend_meta (lucide names) drawn as symbols every system font has (DejaVu included),
// so the page needs no icon font or download.
export const ICONS = {
  Bot: '☺', Brain: '✺', FileText: '¶', Filter: '⊻', GitMerge: '⇉', Globe: '◍', Hash: '#', KeyRound: '⚷',
  Languages: 'Å', Layers: '☰', ListOrdered: '№', MessageSquareText: '✉', Scissors: '✂', Search: '⌕',
  Shuffle: '⇄', Sparkles: '✦', Zap: '⚡',
};

export function iconOf(meta) {
  return ICONS[meta?.icon] || '◆';
}

export async function loadCatalog(api) {
  const [components, schemas] = await Promise.all([api.get('/components'), api.get('/schemas')]);
  const byName = Object.fromEntries(components.map((c) => [c.name, c]));
  return { components, byName, schemas };
}

export function isComponentField(prop) {
  return Boolean(prop && prop['x-component-kind']);
}

export function componentFields(schema) {
  return Object.entries(schema.properties || {}).filter(([, prop]) => isComponentField(prop));
}

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

// A new node of `name` starts from its real defaults: every property's schema default (nested components
// are full {component, params} trees in the generated schema); a list of components without one starts empty.
// Where the component suggests a better start than its declared defaults (frontend_meta `suggested`, from
// ComponentParams.SUGGESTED: a BM25 node gets the keyword preset's Lucene weights, stop words and stemming), that
// start is taken instead; the declared defaults stay what a config that leaves a field out means.
export function defaultNode(catalog, name) {
  const schema = catalog.schemas[name];
  const params = {};
  for (const [field, prop] of Object.entries(schema.properties || {})) {
    if ('default' in prop) params[field] = clone(prop.default);
    else if (prop['x-component-list']) params[field] = [];
  }
  return { component: name, params: { ...params, ...clone(catalog.byName[name]?.suggested || {}) } };
}

// The params the server would run: the node's params over the schema defaults.
export function effectiveParams(catalog, node) {
  const schema = catalog.schemas[node?.component];
  if (!schema) return node?.params || {};
  const params = {};
  for (const [field, prop] of Object.entries(schema.properties || {})) {
    if ('default' in prop) params[field] = prop.default;
  }
  return { ...params, ...(node.params || {}) };
}

function flatten(params, prefix, out) {
  for (const [key, value] of Object.entries(params || {})) {
    const name = `${prefix}${key}`;
    if (value && typeof value === 'object' && !Array.isArray(value) && 'component' in value && 'params' in value) {
      out[name] = value.component;
      flatten(value.params, `${name}.`, out);
    } else if (Array.isArray(value) && value.length && value.every((v) => v && typeof v === 'object' && 'component' in v)) {
      out[name] = value.map((v) => v.component).join(', ');
    } else {
      out[name] = value;
    }
  }
  return out;
}

// A value as the server's representation writes it (Python's None / True / False), or, given the page's
// translator `t`, as a reader says a default in that language ("none", "yes", "no" / "ninguno", "sí", "no").
function show(value, t) {
  if (value === null) return t ? t('valueNone') : 'None';
  if (value === true) return t ? t('valueYes') : 'True';
  if (value === false) return t ? t('valueNo') : 'False';
  if (Array.isArray(value)) return `[${value.map((v) => show(v, t)).join(', ')}]`;
  return String(value);
}

// The representation line in `lang`, filled like ConfigObject.render_representation: {param} and
// {nested.param}; frontend_meta holds one template per language (English where one is missing).
export function representation(catalog, node, lang = 'en') {
  const meta = catalog.byName[node?.component];
  if (!meta) return '';
  const values = flatten(effectiveParams(catalog, node), '', {});
  const templates = meta.representation;
  const template = typeof templates === 'string' ? templates : (templates[lang] ?? templates.en);
  return template.replace(/\{([\w.]+)\}/g, (whole, key) => (key in values ? show(values[key]) : whole));
}

// The words of one parameter in `lang`, from frontend_meta's `params` (dashrag/core/translations.py):
// English where the catalog has no entry in that language.
function words(meta, field) {
  return meta?.params?.[field] || {};
}

// The title in words with the field's own name, which the JSON shows: "Minimum document frequency (min_df)",
// "Frecuencia documental mínima (min_df)"; the titles come from one table keyed by field name
// (dashrag/core/translations.json titles_en / titles_es, through frontend_meta).
export function paramTitle(meta, field, lang) {
  const title = words(meta, field).title || {};
  const shown = title[lang] || title.en || field;
  return shown.toLowerCase().replace(/ /g, '_') === field ? shown : `${shown} (${field})`;
}

export function paramHelp(meta, field, lang, prop) {
  const description = words(meta, field).description;
  return description ? (description[lang] || description.en) : (prop?.description || '');
}

// The schema rjsf draws for one node: its own (non-component) parameters, each description extended
// with its limits and default so every field shows them.
export function scalarSchema(schema, meta, t, lang, data = {}) {
  const properties = {};
  for (const [field, prop] of Object.entries(schema.properties || {})) {
    if (isComponentField(prop)) continue;
    properties[field] = {
      ...withChoices(nullable(prop, t), data[field]), title: paramTitle(meta, field, lang),
      description: withLimits(prop, paramHelp(meta, field, lang, prop), t),
    };
  }
  return { type: 'object', properties, additionalProperties: false };
}

// An open text field with usual values (x-dashrag-choices: a torch device) is drawn as a list of them; a value
// the tree gives that is not one of them (cuda:1, DashAI's "CPU") stays in the list, so loading keeps it.
function withChoices(prop, value) {
  const choices = prop['x-dashrag-choices'];
  if (!Array.isArray(choices)) return prop;
  const values = typeof value === 'string' && !choices.includes(value) ? [...choices, value] : choices;
  return { ...prop, enum: values };
}

// pydantic writes `int | None` as anyOf [{type: integer, ...}, {type: null}]; rjsf draws that as a plain
// input when it is one schema with type [integer, null] (empty input = null).
function nullable(prop, t) {
  // another spelling the server accepts (DashAI's 0 for "no limit", x-value-aliases) is no choice of its own
  const alts = prop.anyOf?.filter((a) => !a['x-value-aliases']);
  if (!alts || alts.length !== 2) return prop;
  if (alts.some((a) => a.items)) {
    // a list or None: rjsf offers the two as a choice; name them
    return { ...prop, anyOf: alts.map((a) => ({ ...a, title: a.type === 'null' ? t('none') : t('list') })) };
  }
  const value = alts.find((a) => a.type !== 'null');
  if (!alts.some((a) => a.type === 'null') || !value || typeof value.type !== 'string' || value.items) return prop;
  const { anyOf, ...rest } = prop;
  const { const: only, ...plain } = value;
  const choices = only !== undefined ? { enum: [only, null] } : value.enum ? { enum: [...value.enum, null] } : {};
  return { ...rest, ...plain, ...choices, type: [value.type, 'null'] };
}

function limitsOf(prop) {
  const parts = [];
  const alternatives = prop.anyOf || [prop];
  for (const alt of alternatives) {
    if (alt.minimum !== undefined) parts.push(['min', `≥ ${alt.minimum}`]);
    if (alt.exclusiveMinimum !== undefined) parts.push(['min', `> ${alt.exclusiveMinimum}`]);
    if (alt.maximum !== undefined) parts.push(['max', `≤ ${alt.maximum}`]);
    if (alt.exclusiveMaximum !== undefined) parts.push(['max', `< ${alt.exclusiveMaximum}`]);
    if (alt.type === 'null') parts.push(['null', null]);
  }
  return parts;
}

function withLimits(prop, help, t) {
  const notes = [];
  for (const [kind, text] of limitsOf(prop)) notes.push(kind === 'null' ? t('may be empty') : text);
  if ('default' in prop) notes.push(`${t('default')}: ${show(prop.default, t)}`);
  const base = help || '';
  return notes.length ? `${base}${base ? ' ' : ''}(${notes.join('; ')})` : base;
}

// A choice's label in `lang` with its exact value: "Round robin (round_robin)", "Por turnos (round_robin)".
function choiceLabel(labels, value, lang, t) {
  if (value === null) return t('none');
  const found = (labels || []).find((l) => l.value === value);
  const label = found ? (found[lang] || found.en) : String(value);
  return label === String(value) ? label : `${label} (${value})`;
}

// A list field that the rules pair with a list of components (same_length: one weight per child) labels each
// item by the component it belongs to: "Child 1: BM25".
function itemLabelsOf(catalog, schema, node, field, lang, t) {
  const rule = (schema['x-dashrag-rules'] || []).find((r) => r.rule === 'same_length' && r.fields[0] === field);
  const children = rule && schema.properties?.[rule.fields[1]]?.['x-component-list'] ? node.params?.[rule.fields[1]] : null;
  if (!Array.isArray(children)) return null;
  return children.map((child, i) => {
    const meta = catalog.byName[child?.component];
    const name = meta ? (meta.display[lang] || meta.display.en).name : String(child?.component);
    return t('itemOf', { n: i + 1, name });
  });
}

// rjsf's uiSchema for one node's form: readable labels for enum values, in the page's language; list items
// labelled by what they belong to; the fields kept only for older configs (x-dashrag-compatibility) under the
// "Advanced / compatibility" fold, open while one of them has a problem.
export function formUiSchema(formSchema, meta, lang, t, { catalog, schema, node, errorFields = [] } = {}) {
  const ui = { 'ui:submitButtonOptions': { norender: true } };
  const advanced = [];
  for (const [field, prop] of Object.entries(formSchema.properties || {})) {
    if (Array.isArray(prop.enum)) {
      ui[field] = { 'ui:enumNames': prop.enum.map((v) => choiceLabel(words(meta, field).enum_labels, v, lang, t)) };
    }
    if (prop['x-dashrag-compatibility']) advanced.push(field);
    const labels = catalog && schema && node ? itemLabelsOf(catalog, schema, node, field, lang, t) : null;
    if (labels) ui[field] = { ...ui[field], 'ui:options': { itemLabels: labels }, items: { 'ui:options': { label: false } } };
  }
  if (advanced.length) {
    ui['ui:options'] = { advanced, advancedLabel: t('advanced'), advancedOpen: advanced.some((f) => errorFields.includes(f)) };
  }
  return ui;
}

// A loaded tree with the reference's parameter names (x-dashrag-aliases: alias -> name) renamed to dashrag's,
// as the server's validation renames them, so the forms show them and the JSON agrees with what is saved.
export function canonicalTree(catalog, node) {
  const schema = catalog.schemas[node?.component];
  if (!schema || !node.params || typeof node.params !== 'object' || Array.isArray(node.params)) return node;
  const aliases = schema['x-dashrag-aliases'] || {};
  const params = {};
  for (const [key, value] of Object.entries(node.params)) {
    const name = key in aliases && !(aliases[key] in node.params) ? aliases[key] : key;
    const prop = schema.properties?.[name];
    if (prop && prop['x-component-kind'] && Array.isArray(value)) params[name] = value.map((v) => canonicalTree(catalog, v));
    else if (prop && prop['x-component-kind'] && value && typeof value === 'object') params[name] = canonicalTree(catalog, value);
    else params[name] = value;
  }
  return { ...node, params };
}
