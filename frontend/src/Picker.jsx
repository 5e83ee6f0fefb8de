import React, { useEffect, useRef } from 'react';
import { iconOf } from './catalog';
import { categoryName } from './i18n';

// A modal list of the components a slot accepts, grouped by category, each with icon, name and description.
export function Picker({ catalog, accepts, lang, t, onPick, onClose, title }) {
  const dialog = useRef(null);
  useEffect(() => {
    const node = dialog.current;
    const opener = document.activeElement; // the focus goes back there when the picker closes
    node.showModal();
    const first = node.querySelector('button.pick');
    if (first) first.focus();
    return () => {
      if (node.open) node.close();
      if (opener && opener.isConnected) opener.focus();
    };
  }, []);
  const groups = {};
  for (const name of accepts) {
    const meta = catalog.byName[name];
    if (!meta) continue;
    (groups[meta.category] = groups[meta.category] || []).push(meta);
  }
  return (
    <dialog ref={dialog} className="picker" aria-label={title} onCancel={(e) => { e.preventDefault(); onClose(); }}>
      <h2>{title}</h2>
      {Object.entries(groups).sort(([a], [b]) => a.localeCompare(b)).map(([category, metas]) => (
        <section key={category} className="picker-group">
          <h3>{categoryName(lang, category)}</h3>
          <ul>
            {metas.map((meta) => {
              const display = meta.display[lang] || meta.display.en;
              return (
                <li key={meta.name}>
                  <button type="button" className="pick" data-component={meta.name} onClick={() => onPick(meta.name)}>
                    <span className="icon" aria-hidden="true">{iconOf(meta)}</span>
                    <span className="pick-text">
                      <strong>{display.name}</strong> <code>{meta.name}</code>
                      <span className="pick-description">{display.description}</span>
                    </span>
                  </button>
                </li>
              );
            })}
          </ul>
        </section>
      ))}
      <button type="button" onClick={onClose}>{t('cancel')}</button>
    </dialog>
  );
}
