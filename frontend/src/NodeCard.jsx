import React, { useEffect, useState } from 'react';
import Form from '@rjsf/core';
import validator from '@rjsf/validator-ajv8';
import { componentFields, defaultNode, formUiSchema, iconOf, paramHelp, paramTitle, representation, scalarSchema } from './catalog';
import { FORM_TEMPLATES } from './formTemplates';
import { rjsfTranslator } from './i18n';
import { isWithin, joinText, parsePath, setIn } from './paths';
import { Picker } from './Picker';

// rjsf must never add what the user did not enter: the tree on screen is exactly the JSON it downloads.
const FORM_DEFAULTS = { emptyObjectFields: 'skipDefaults', arrayMinItems: { populate: 'never' } };

// rjsf's ids: `<root>_<field>`, the root naming the node by its JSON path (`node-params-children-0`);
// `base` tells apart forms that are not in the tree (the chunker's is `chunker`).
export function nodeId(path, base = 'node') {
  return path ? `${base}-${path.replace(/[^A-Za-z0-9]+/g, '-').replace(/-$/, '')}` : base;
}

// A message of the server's (it checks a tree too) is in English: in another language it is introduced
// as the server's words. The page's own checks speak the page's language.
export function errorText(e, t, lang) {
  return e.source === 'server' && lang !== 'en' ? `${t('serverSays')}: ${e.message}` : e.message;
}

function ErrorList({ errors, t, lang, className = 'errors' }) {
  if (!errors || errors.length === 0) return null;
  return (
    <ul className={className} role="alert">
      {errors.map((e) => <li key={`${e.source}:${e.message}`} data-source={e.source}>{e.worded ? e.message : errorText(e, t, lang)}</li>)}
    </ul>
  );
}

// The errors of one node, split into those rjsf shows at its own fields (an ErrorSchema), those of its
// component slots, and those of the node itself (unknown component, unexpected keys).
function splitErrors(errorsByPath, path, schema, t, lang) {
  const paramsPath = joinText(path, 'params');
  const prefix = `${paramsPath}.`;
  const own = {};
  const slots = {};
  const node = [];
  for (const [where, list] of Object.entries(errorsByPath)) {
    if (where === path || where === joinText(path, 'component') || where === paramsPath) {
      node.push(...list);
      continue;
    }
    const rel = path ? (where.startsWith(`${path}.`) ? parsePath(where.slice(path.length + 1)) : []) : parsePath(where);
    if (rel.length === 1 && rel[0] !== 'params') { // a key a node does not have ("parms")
      node.push(...list.map((e) => ({ ...e, message: `${rel[0]}: ${errorText(e, t, lang)}`, worded: true })));
      continue;
    }
    if (!where.startsWith(prefix)) continue;
    const rest = parsePath(where.slice(prefix.length));
    const [field] = rest;
    const prop = schema.properties?.[field];
    if (prop && prop['x-component-kind']) {
      if (rest.length === 1) slots[field] = [...(slots[field] || []), ...list];
      continue; // deeper errors belong to the nested node
    }
    if (!prop) {
      node.push(...list.map((e) => ({ ...e, message: `${field}: ${errorText(e, t, lang)}`, worded: true })));
      continue;
    }
    let tree = own;
    for (const key of rest) tree = tree[key] = tree[key] || {};
    tree.__errors = [...(tree.__errors || []), ...list.map((e) => errorText(e, t, lang))];
  }
  return { own, slots, node };
}

// The problems at or under a node's path (shown as a count on a collapsed node).
function problemsWithin(errorsByPath, path) {
  return Object.entries(errorsByPath).filter(([where]) => isWithin(path, where)).reduce((n, [, list]) => n + list.length, 0);
}

export function NodeCard({ catalog, node, path, accepts, lang, t, errorsByPath, onChange, actions, idBase = 'node', reveal }) {
  const [picking, setPicking] = useState(null); // {title, accepts, apply(name)}
  const [collapsed, setCollapsed] = useState(false);
  // a problem link opens every node on the way to its field (App's `reveal`: {path, n})
  useEffect(() => {
    if (reveal && isWithin(path, reveal.path)) setCollapsed(false);
  }, [reveal, path]);
  const meta = catalog.byName[node.component];
  const schema = catalog.schemas[node.component];
  if (!meta || !schema) {
    return (
      <section className="node unknown" data-path={path}>
        <header><strong>{String(node.component)}</strong>{actions}</header>
        <ErrorList errors={errorsByPath[joinText(path, 'component')] || errorsByPath[path]} t={t} lang={lang} />
      </section>
    );
  }
  const display = meta.display[lang] || meta.display.en;
  const params = node.params || {};
  const slotFields = componentFields(schema);
  const scalarData = Object.fromEntries(Object.entries(params).filter(([k]) => !schema.properties?.[k]?.['x-component-kind']));
  const { own, slots, node: nodeErrors } = splitErrors(errorsByPath, path, schema, t, lang);
  const formSchema = scalarSchema(schema, meta, t, lang, params);

  const setParam = (field, value) => onChange({ ...node, params: { ...params, [field]: value } });
  // The form shows every field's value, the default where the tree leaves it out; it writes back only
  // what the tree states or the user changed, so a loaded tree downloads exactly as it came.
  const defaults = Object.fromEntries(Object.entries(schema.properties || {})
    .filter(([, prop]) => !prop['x-component-kind'] && 'default' in prop).map(([k, prop]) => [k, prop.default]));
  const onForm = ({ formData }) => {
    const next = { ...params };
    for (const [key, value] of Object.entries(formData)) {
      if (value === undefined) delete next[key];
      else if (key in params || JSON.stringify(value) !== JSON.stringify(defaults[key])) next[key] = value;
    }
    onChange({ ...node, params: next });
  };
  const pick = (title, slotAccepts, apply) => setPicking({ title, accepts: slotAccepts, apply });

  const inside = collapsed ? problemsWithin(errorsByPath, path) : 0;
  return (
    <section className="node" data-path={path} data-component={node.component} aria-label={display.name}
      data-collapsed={collapsed ? 'true' : undefined}>
      <header className="node-header">
        <button type="button" className="collapse" aria-expanded={!collapsed}
          title={collapsed ? t('expand') : t('collapse')} onClick={() => setCollapsed(!collapsed)}>
          <span aria-hidden="true">{collapsed ? '▸' : '▾'}</span>
          <span className="visually-hidden">{collapsed ? t('expand') : t('collapse')} {display.name}</span>
        </button>
        <span className="icon" aria-hidden="true">{iconOf(meta)}</span>
        <span className="node-title">
          <strong>{display.name}</strong> <code>{node.component}</code>
          <span className="node-description">{display.description}</span>
          {inside > 0 && <span className="inside-problems">{t('problemsInside', { count: inside })}</span>}
        </span>
        <span className="node-actions">
          {accepts && (
            <button type="button" onClick={() => pick(t('pickerTitle'), accepts, (name) => onChange(defaultNode(catalog, name)))}>
              {t('replace')}
            </button>
          )}
          {actions}
        </span>
      </header>
      <p className="representation" aria-live="polite">{representation(catalog, node, lang)}</p>
      <ErrorList errors={nodeErrors} t={t} lang={lang} />
      <div className="node-form">
        <Form
          schema={formSchema}
          formData={{ ...defaults, ...scalarData }}
          validator={validator}
          onChange={onForm}
          extraErrors={own}
          showErrorList={false}
          noHtml5Validate
          idPrefix={nodeId(path, idBase)}
          uiSchema={formUiSchema(formSchema, meta, lang, t, { catalog, schema, node, errorFields: Object.keys(own) })}
          templates={FORM_TEMPLATES}
          experimental_defaultFormStateBehavior={FORM_DEFAULTS}
          translateString={rjsfTranslator(lang)}
        />
      </div>
      {slotFields.map(([field, prop]) => {
        const fieldPath = joinText(joinText(path, 'params'), field);
        const value = params[field];
        const label = paramTitle(meta, field, lang);
        const help = paramHelp(meta, field, lang, prop);
        if (prop['x-component-list']) {
          const list = Array.isArray(value) ? value : [];
          const full = prop.maxItems !== undefined && list.length >= prop.maxItems;
          return (
            <fieldset key={field} className="slot" data-field={field}>
              <legend>{label}</legend>
              {help && <p className="help">{help}</p>}
              <ErrorList errors={slots[field]} t={t} lang={lang} />
              {list.map((child, i) => {
                const move = (to) => {
                  const copy = [...list];
                  [copy[i], copy[to]] = [copy[to], copy[i]];
                  setParam(field, copy);
                };
                return (
                  <NodeCard
                    key={i}
                    catalog={catalog}
                    node={child}
                    path={joinText(fieldPath, i)}
                    accepts={prop['x-accepts']}
                    lang={lang}
                    t={t}
                    errorsByPath={errorsByPath}
                    idBase={idBase}
                    reveal={reveal}
                    onChange={(next) => setParam(field, setIn(list, [i], next))}
                    actions={(
                      <>
                        {i > 0 && <button type="button" onClick={() => move(i - 1)}>{t('moveUp')}</button>}
                        {i < list.length - 1 && <button type="button" onClick={() => move(i + 1)}>{t('moveDown')}</button>}
                        <button type="button" onClick={() => setParam(field, list.filter((_, j) => j !== i))}>{t('remove')}</button>
                      </>
                    )}
                  />
                );
              })}
              {!full && (
                <button type="button" className="add" data-slot={fieldPath}
                  onClick={() => pick(t('addTo', { field: label }), prop['x-accepts'],
                    (name) => setParam(field, [...list, defaultNode(catalog, name)]))}>
                  + {t('addTo', { field: label })}
                </button>
              )}
            </fieldset>
          );
        }
        return (
          <fieldset key={field} className="slot" data-field={field}>
            <legend>{label}</legend>
            {help && <p className="help">{help}</p>}
            <ErrorList errors={slots[field]} t={t} lang={lang} />
            {value && typeof value === 'object' ? (
              <NodeCard
                catalog={catalog}
                node={value}
                path={fieldPath}
                accepts={prop['x-accepts']}
                lang={lang}
                t={t}
                errorsByPath={errorsByPath}
                idBase={idBase}
                reveal={reveal}
                onChange={(next) => setParam(field, next)}
                actions={prop.default === null && (
                  <button type="button" onClick={() => setParam(field, null)}>{t('remove')}</button>
                )}
              />
            ) : (
              <button type="button" className="add" data-slot={fieldPath}
                onClick={() => pick(t('setComponent', { field: label }), prop['x-accepts'],
                  (name) => setParam(field, defaultNode(catalog, name)))}>
                + {t('setComponent', { field: label })}
              </button>
            )}
          </fieldset>
        );
      })}
      {picking && (
        <Picker catalog={catalog} accepts={picking.accepts} lang={lang} t={t} title={picking.title}
          onClose={() => setPicking(null)}
          onPick={(name) => { setPicking(null); picking.apply(name); }} />
      )}
    </section>
  );
}
