// "N problems" above the tree, with a link to each: a click opens the collapsed nodes on the way (App's
// `reveal`), scrolls the field into view and puts the focus in it.
import React, { useEffect } from 'react';
import { paramTitle } from './catalog';
import { errorText, nodeId } from './NodeCard';
import { getIn, parsePath, pathText } from './paths';

// The node an error path belongs to and the rest of it: "params.children[0].params.top_k" is the node at
// "params.children[0]" and its field ["top_k"]. A path without "params" is the node itself (its component).
export function splitPath(path) {
  const keys = parsePath(path);
  const last = keys.lastIndexOf('params');
  return last < 0 ? { node: keys.filter((k) => k !== 'component'), rest: [] }
    : { node: keys.slice(0, last), rest: keys.slice(last + 1) };
}

// Where the page draws what a path names: the field's input (rjsf's id `<node id>_<field>[_<index>]`), else the
// slot of a component field, else the node's section.
export function locate(path) {
  const { node, rest } = splitPath(path);
  const base = nodeId(pathText(node));
  for (let n = rest.length; n > 0; n -= 1) {
    const id = `${base}_${rest.slice(0, n).join('_')}`;
    const found = document.getElementById(id) || document.getElementById(`${id}__anyof_select`);
    if (found) return found;
  }
  for (let n = parsePath(path).length; n >= 0; n -= 1) {
    const section = document.querySelector(`section.node[data-path="${CSS.escape(pathText(parsePath(path).slice(0, n)))}"]`);
    if (!section) continue;
    const slot = rest.length && n === node.length ? section.querySelector(`:scope > fieldset.slot[data-field="${CSS.escape(String(rest[0]))}"]`) : null;
    return slot || section;
  }
  return null;
}

function where(catalog, tree, path, lang) {
  const { node, rest } = splitPath(path);
  const component = getIn(tree, [...node, 'component']);
  const meta = catalog.byName[component];
  const name = meta ? (meta.display[lang] || meta.display.en).name : String(component ?? '');
  const field = typeof rest[0] === 'string' && meta ? paramTitle(meta, rest[0], lang) : null;
  return field ? `${name} · ${field}` : name;
}

export function ProblemList({ catalog, tree, errors, t, lang, onReveal }) {
  return (
    <details className="problems" open>
      <summary className="bad">{errors.length} {t('errors')}</summary>
      <ol aria-label={t('problemsList')}>
        {errors.map((e) => (
          <li key={`${e.source}:${e.path}:${e.message}`}>
            <button type="button" className="problem-link" data-path={e.path} onClick={() => onReveal(e.path)}>
              <strong>{where(catalog, tree, e.path, lang)}</strong>: {errorText(e, t, lang)}
            </button>
          </li>
        ))}
      </ol>
    </details>
  );
}

// After the nodes on the way opened (the render that `reveal` caused), bring the field into view and focus it.
export function useReveal(reveal) {
  useEffect(() => {
    if (!reveal) return undefined;
    const timer = setTimeout(() => { // after the nodes that `reveal` opens have rendered open
      const target = locate(reveal.path);
      if (!target) return;
      for (let fold = target.closest('details'); fold; fold = fold.parentElement?.closest('details')) fold.open = true;
      const focusable = target.matches('input, select, textarea, button') ? target : null;
      if (!focusable) target.setAttribute('tabindex', '-1');
      target.scrollIntoView({ block: 'center' });
      target.focus({ preventScroll: true });
    }, 50);
    return () => clearTimeout(timer);
  }, [reveal]);
}
