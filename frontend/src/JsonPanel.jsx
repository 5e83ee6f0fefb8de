import React, { useEffect, useState } from 'react';

export function treeText(tree) {
  return `${JSON.stringify(tree, null, 2)}\n`;
}

// The tree as JSON: paste or upload to load it into the forms, download what the forms hold.
export function JsonPanel({ tree, t, onLoad, presets }) {
  const [draft, setDraft] = useState(tree ? treeText(tree) : '');
  const [presetName, setPresetName] = useState('');
  const [problem, setProblem] = useState(null);
  useEffect(() => { setDraft(tree ? treeText(tree) : ''); }, [tree]);

  const load = (text) => {
    try {
      onLoad(JSON.parse(text));
      setProblem(null);
    } catch (error) {
      setProblem(t('badJson', { error: error.message }));
    }
  };
  const upload = async (event) => {
    const file = event.target.files[0];
    if (file) load(await file.text());
    event.target.value = '';
  };
  const download = () => {
    const url = URL.createObjectURL(new Blob([treeText(tree)], { type: 'application/json' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = 'tree.json';
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };
  return (
    <section className="json-panel">
      <h2>{t('json')}</h2>
      <p className="help">{t('jsonHint')}</p>
      {presets.length > 0 && (
        <div className="buttons">
          <label>{t('presets')}{' '}
            <select value={presetName} onChange={(e) => setPresetName(e.target.value)}>
              <option value="">—</option>
              {presets.map((p) => <option key={p.name} value={p.name}>{p.name}</option>)}
            </select>
          </label>
          <button type="button" disabled={!presetName}
            onClick={() => onLoad(presets.find((p) => p.name === presetName).config)}>{t('loadPreset')}</button>
        </div>
      )}
      <label className="visually-hidden" htmlFor="tree-json">{t('json')}</label>
      <textarea id="tree-json" spellCheck="false" value={draft} onChange={(e) => setDraft(e.target.value)} rows={18} />
      {problem && <p className="error" role="alert">{problem}</p>}
      <div className="buttons">
        <button type="button" onClick={() => load(draft)}>{t('loadJson')}</button>
        <label className="file-button">{t('uploadJson')}{' '}
          <input type="file" accept="application/json,.json" onChange={upload} />
        </label>
        <button type="button" onClick={download} disabled={!tree}>{t('download')}</button>
      </div>
    </section>
  );
}
