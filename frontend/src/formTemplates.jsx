// The page's own rjsf templates, for what rjsf's defaults draw poorly here:
//  - buttons: rjsf's core theme draws Bootstrap 3 glyphicons, a font the page does not load (blank ovals);
//    these show a system-font symbol and the action in words, in the page's language (rjsf's translateString);
//  - a list's items: each labelled by `ui:options.itemLabels` (a weight by the child it weighs), the per-item
//    "weights-1*" title of rjsf left out;
//  - a node's fields: those of `ui:options.advanced` (kept only so older configs load) under a fold.
import React from 'react';
import { TranslatableString, getUiOptions } from '@rjsf/utils';

function TextButton({ symbol, text, className, registry, uiSchema, iconType, icon, ...rest }) {
  return (
    <button type="button" className={`list-button ${className || ''}`} title={text} {...rest}>
      <span aria-hidden="true">{symbol}</span> {text}
    </button>
  );
}

const say = (props, key) => props.registry.translateString(key);

export const ButtonTemplates = {
  MoveUpButton: (props) => (
    <TextButton symbol="↑" text={say(props, TranslatableString.MoveUpButton)} {...props} className="array-item-move-up" />),
  MoveDownButton: (props) => (
    <TextButton symbol="↓" text={say(props, TranslatableString.MoveDownButton)} {...props} className="array-item-move-down" />),
  RemoveButton: (props) => (
    <TextButton symbol="✕" text={say(props, TranslatableString.RemoveButton)} {...props} className="array-item-remove" />),
  CopyButton: (props) => (
    <TextButton symbol="⧉" text={say(props, TranslatableString.CopyButton)} {...props} className="array-item-copy" />),
  AddButton: (props) => (
    <TextButton symbol="+" text={say(props, TranslatableString.AddItemButton)} {...props} className="array-item-add" />),
};

export function ArrayFieldTemplate(props) {
  const { items, canAdd, onAddClick, idSchema, uiSchema, registry, disabled, readonly, className } = props;
  const { itemLabels = [] } = getUiOptions(uiSchema);
  const { MoveUpButton, MoveDownButton, RemoveButton, AddButton } = registry.templates.ButtonTemplates;
  return (
    <div className={`${className || ''} list-field`} id={idSchema.$id}>
      <ol className="list-items">
        {items.map(({ key, ...item }) => (
          <li key={key} className="list-item" data-index={item.index}>
            <label className="list-item-label" htmlFor={`${idSchema.$id}_${item.index}`}>
              {itemLabels[item.index] ?? `#${item.index + 1}`}
            </label>
            <div className="list-item-field">{item.children}</div>
            {item.hasToolbar && (
              <span className="list-item-buttons">
                {item.hasMoveUp && <MoveUpButton onClick={item.onReorderClick(item.index, item.index - 1)}
                  disabled={disabled || readonly} registry={registry} />}
                {item.hasMoveDown && <MoveDownButton onClick={item.onReorderClick(item.index, item.index + 1)}
                  disabled={disabled || readonly} registry={registry} />}
                {item.hasRemove && <RemoveButton onClick={item.onDropIndexClick(item.index)}
                  disabled={disabled || readonly} registry={registry} />}
              </span>
            )}
          </li>
        ))}
      </ol>
      {canAdd && <AddButton onClick={onAddClick} disabled={disabled || readonly} registry={registry} />}
    </div>
  );
}

export function ObjectFieldTemplate({ properties, uiSchema, idSchema }) {
  const { advanced = [], advancedLabel = '', advancedOpen = false } = getUiOptions(uiSchema);
  const shown = properties.filter((p) => !p.hidden);
  const main = shown.filter((p) => !advanced.includes(p.name));
  const folded = shown.filter((p) => advanced.includes(p.name));
  return (
    <fieldset id={idSchema.$id}>
      {main.map((p) => <React.Fragment key={p.name}>{p.content}</React.Fragment>)}
      {folded.length > 0 && (
        <details className="advanced" open={advancedOpen || undefined}>
          <summary>{advancedLabel}</summary>
          {folded.map((p) => <React.Fragment key={p.name}>{p.content}</React.Fragment>)}
        </details>
      )}
    </fieldset>
  );
}

export const FORM_TEMPLATES = { ButtonTemplates, ArrayFieldTemplate, ObjectFieldTemplate };
