import React, { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { DocumentsPanel } from './DocumentsPanel';
import { Failure } from './Failure';
import { TraceNode } from './Trace';

// A round-robin merge at the root answers ranks, not relevance: its 1, 0.5, 0.333 need saying.
const mergesByRank = (trace) => trace && trace.component === 'ParallelRetriever'
  && (trace.params?.merge_strategy ?? 'round_robin') === 'round_robin';

// Where a hit's text is in the user's files: "report.pdf · p. 3 · Methods › Sampling" (the parts it has).
function origin(metadata) {
  if (!metadata) return '';
  const parts = [];
  if (typeof metadata.path === 'string') parts.push(metadata.path);
  if (Number.isInteger(metadata.page)) parts.push(`p. ${metadata.page}`);
  if (typeof metadata.section === 'string') parts.push(metadata.section);
  return parts.join(' · ');
}

function Results({ answer, catalog, t, lang, shared }) {
  if (answer.error) return <Failure error={answer.error} t={t} />;
  return (
    <div className="answer">
      <h3>{t('results')} <small>({Number(answer.elapsed_ms).toFixed(1)} ms)</small></h3>
      {answer.trace?.filters && (
        <p className="results-filter">{t('filterApplied')} <code>{JSON.stringify(answer.trace.filters)}</code></p>
      )}
      {answer.warnings?.length > 0 && (
        <ul className="answer-warnings" role="status">
          {answer.warnings.map((w) => <li key={w}>{t('warningLabel')} {w}</li>)}
        </ul>
      )}
      {mergesByRank(answer.trace) && <p className="score-note">{t('roundRobinScores')}</p>}
      {shared && <p className="score-note">{t('sharedCount', { count: shared.size })}</p>}
      {answer.chunks.length === 0 ? <p>{t('noResults')}</p> : (
        <ol className="results">
          {answer.chunks.map((c) => (
            <li key={c.chunk_id} data-shared={shared ? String(shared.has(String(c.document_id))) : undefined}>
              <div className="result-head">
                <span className="score">{t('score')} {Number(c.score).toFixed(4)}</span>
                {' · '}<span>{t('document')} {c.title ? `${c.title} ` : ''}<code>{String(c.document_id)}</code>#{c.position}</span>
                {shared && shared.has(String(c.document_id)) && <span className="shared-badge">{t('sharedResult')}</span>}
              </div>
              {origin(c.metadata) && <p className="result-from">{t('from')} {origin(c.metadata)}</p>}
              {c.metadata && Object.keys(c.metadata).length > 0 && (
                <p className="result-metadata">{t('metadata')} <code>{JSON.stringify(c.metadata)}</code></p>
              )}
              <p className="result-text">{c.text}</p>
            </li>
          ))}
        </ol>
      )}
      {answer.trace && (
        <section className="trace">
          <h3>{t('trace')}</h3>
          <TraceNode node={answer.trace} catalog={catalog} t={t} lang={lang} />
        </section>
      )}
    </div>
  );
}

// The filter box's text: `value` to check and send (undefined: empty or not JSON), `notJson` the parser's words.
function readFilter(text) {
  if (!text.trim()) return { value: undefined, notJson: null };
  try {
    return { value: JSON.parse(text), notJson: null };
  } catch (error) {
    return { value: undefined, notJson: error.message };
  }
}

// The filter text with `field` added as `{name: its most frequent value}` (the box's object kept when it is one).
function withField(text, field) {
  const current = readFilter(text).value;
  const base = current && typeof current === 'object' && !Array.isArray(current) ? current : {};
  return JSON.stringify({ ...base, [field.name]: field.values.length ? field.values[0] : { $exists: true } });
}

// The chosen tree's metadata fields (GET /trees/{name}/fields) offered at the filter box: name, types and a few
// values; a click adds the field to the filter.
function FilterFields({ fields, t, onPick }) {
  if (fields.length === 0) return <p className="help filter-fields">{t('filterNoFields')}</p>;
  return (
    <p className="help filter-fields">{t('filterFields')}{' '}
      {fields.map((field) => (
        <button type="button" key={field.name} className="field-chip" data-field={field.name}
          title={`${field.types.join(', ')} · ${field.values.map((v) => JSON.stringify(v)).join(', ')}`}
          onClick={() => onPick(field)}>{field.name} <small>({field.types.join(', ')})</small></button>
      ))}
    </p>
  );
}

// Delete asks first, in the tree's own row: it names the tree and its document count, and focus goes to
// Cancel (Enter on a focused Delete must not destroy anything). After a delete, focus goes to the list's
// heading, never to the next tree's Delete (issue 39).
function DeleteConfirm({ tree, t, onConfirm, onCancel }) {
  const cancel = useRef(null);
  useEffect(() => { cancel.current?.focus(); }, []);
  return (
    <span className="delete-confirm" role="group" aria-label={t('deleteAsk', { name: tree.name, count: tree.documents })}>
      {' '}<span>{t('deleteAsk', { name: tree.name, count: tree.documents })}</span>
      {' '}<button type="button" className="danger" onClick={onConfirm}>{t('deleteConfirm', { name: tree.name })}</button>
      {' '}<button type="button" ref={cancel} onClick={onCancel}
        onKeyDown={(e) => { if (e.key === 'Escape') onCancel(); }}>{t('cancel')}</button>
    </span>
  );
}

export function TreeList({ trees, t, lang, onReload, onDelete, onDocuments, heading }) {
  const [asking, setAsking] = useState(null); // the tree whose Delete waits for a confirmation
  if (trees.length === 0) return <p>{t('noTrees')}</p>;
  const confirm = (name) => { setAsking(null); heading.current?.focus(); onDelete(name); };
  return (
    <ul className="tree-list">
      {trees.map((tree) => (
        <li key={tree.name} data-tree={tree.name}>
          <strong>{tree.name}</strong> <code>{tree.config?.component}</code>
          {' · '}{tree.documents} {t('documents')} · {tree.chunks} {t('chunks')} · {tree.saved_at ? new Date(tree.saved_at).toLocaleString(lang) : ''}
          {' '}<button type="button" onClick={() => onDocuments(tree.name)}>{t('docsButton')}</button>
          {' '}<button type="button" onClick={() => onReload(tree.name)}>{t('reload')}</button>
          {asking === tree.name
            ? <DeleteConfirm tree={tree} t={t} onConfirm={() => confirm(tree.name)} onCancel={() => setAsking(null)} />
            : <>{' '}<button type="button" onClick={() => setAsking(tree.name)}>{t('delete')}</button></>}
        </li>
      ))}
    </ul>
  );
}

export function QueryPanel({ api, catalog, t, lang, trees, refreshTrees, chosen }) {
  const [query, setQuery] = useState('');
  const [first, setFirst] = useState('');
  const [second, setSecond] = useState('');
  const [compare, setCompare] = useState(false);
  const [answers, setAnswers] = useState([]);
  const [busy, setBusy] = useState(false);
  const [topK, setTopK] = useState('');
  const [filterText, setFilterText] = useState('');
  const [checked, setChecked] = useState({ text: '', errors: [] }); // the server's check of the filter text
  const [filterRefused, setFilterRefused] = useState(null); // the server's 422 about the filter sent
  const [managing, setManaging] = useState(null); // the tree whose documents panel is open
  const [fields, setFields] = useState([]); // the chosen tree's metadata fields, offered at the filter box
  const treesHeading = useRef(null); // where focus goes after a delete

  // The filter is checked by the server's own code (POST /schemas/filter/check: parse_filter, as the CLI and
  // the query routes), so the page says what they say, in one message; only text that is not JSON is the page's.
  const filter = useMemo(() => readFilter(filterText), [filterText]);
  useEffect(() => {
    if (filter.value === undefined) return undefined;
    let live = true;
    const timer = setTimeout(() => api.post('/schemas/filter/check', filter.value).then(
      (result) => { if (live) setChecked({ text: filterText, errors: result.errors }); },
      () => { if (live) setChecked({ text: filterText, errors: [] }); }), 150);
    return () => { live = false; clearTimeout(timer); };
  }, [api, filter, filterText]);
  const checking = filter.value !== undefined && checked.text !== filterText;
  const filterErrors = checked.text === filterText ? checked.errors : [];
  const filterProblems = [
    ...(filter.notJson ? [t('filterNotJson', { error: filter.notJson })] : []),
    ...filterErrors.map((e) => `${e.path}: ${e.message}`),
    ...(filterRefused ? [filterRefused] : []),
  ];
  const filterBad = filter.notJson !== null || filterErrors.length > 0 || checking;

  useEffect(() => { if (chosen) setFirst(chosen); }, [chosen]);
  useEffect(() => {
    if (!first || !trees.some((tree) => tree.name === first)) { // none chosen, or the chosen one was deleted
      setFields([]);
      return undefined;
    }
    let live = true;
    api.get(`/trees/${encodeURIComponent(first)}/fields`).then((r) => { if (live) setFields(r.fields); },
      () => { if (live) setFields([]); });
    return () => { live = false; };
  }, [api, first, trees]);
  useEffect(() => {
    if (!first && trees.length) setFirst(trees[0].name);
    if (!second && trees.length > 1) setSecond(trees[1].name);
  }, [trees, first, second]);

  const run = useCallback(async (event) => {
    event.preventDefault();
    const names = compare ? [first, second] : [first];
    setBusy(true);
    setFilterRefused(null);
    const body = { query, trace: true, ...(topK ? { top_k: Number(topK) } : {}),
      ...(filter.value !== undefined ? { filters: filter.value } : {}) };
    const results = await Promise.all(names.map((name) => api
      .post(`/trees/${encodeURIComponent(name)}/query`, body)
      .then((answer) => ({ name, ...answer }), (error) => ({ name, error }))));
    // a filter the schema allows but the corpus cannot answer (a number compared with a string): the server's
    // 422 names the path in the filter; it is shown at the box, where it is fixed
    const refused = results.find((r) => r.error?.status === 422 && /(^|\n)filters/.test(r.error.detail || ''));
    if (refused) setFilterRefused(refused.error.detail);
    setAnswers(results);
    setBusy(false);
  }, [api, compare, first, second, query, topK, filter.value]);

  // side by side: the documents both trees returned, marked in each column
  const found = answers.filter((a) => !a.error).map((a) => new Set(a.chunks.map((c) => String(c.document_id))));
  const shared = answers.length > 1 && found.length === answers.length
    ? new Set([...found[0]].filter((d) => found.slice(1).every((f) => f.has(d)))) : null;

  const act = (promise) => promise.then(refreshTrees, (error) => setAnswers([{ name: '', error }]));
  const select = (value, set, label) => (
    <label>{label}{' '}
      <select value={value} onChange={(e) => set(e.target.value)}>
        {trees.length === 0 && <option value="">{t('noTree')}</option>}
        {trees.map((tree) => <option key={tree.name} value={tree.name}>{tree.name}</option>)}
      </select>
    </label>
  );
  return (
    <div className="query-panel">
      <section>
        <h2 ref={treesHeading} tabIndex="-1">{t('savedTrees')}</h2>
        <TreeList trees={trees} t={t} lang={lang} heading={treesHeading}
          onReload={(name) => act(api.post(`/trees/${encodeURIComponent(name)}/reload`, {}))}
          onDelete={(name) => act(api.del(`/trees/${encodeURIComponent(name)}`))}
          onDocuments={setManaging} />
      </section>
      {managing && trees.some((tree) => tree.name === managing) && (
        <DocumentsPanel api={api} name={managing} t={t} lang={lang} onChanged={refreshTrees}
          sourceFolder={trees.find((tree) => tree.name === managing).source_folder || ''}
          onQuery={(name) => { setFirst(name); setManaging(null); }} onClose={() => setManaging(null)} />
      )}
      <form className="query-form" onSubmit={run}>
        <h2>{t('query')}</h2>
        {select(first, setFirst, t('tree'))}
        <label><input type="checkbox" checked={compare} onChange={(e) => setCompare(e.target.checked)} /> {t('compare')}</label>
        {compare && select(second, setSecond, `${t('tree')} 2`)}
        <label className="query-input">{t('query')}{' '}
          <input type="search" value={query} placeholder={t('queryPlaceholder')} onChange={(e) => setQuery(e.target.value)} />
        </label>
        <label>{t('topK')}{' '}
          <input type="number" min="1" max="1000" step="1" value={topK} placeholder={t('topKDefault')}
            onChange={(e) => setTopK(e.target.value)} />
        </label>
        <div className="filter-box">
          <label htmlFor="query-filter">{t('filterLabel')}</label>
          <textarea id="query-filter" rows="2" value={filterText} placeholder={t('filterPlaceholder')} spellCheck="false"
            aria-invalid={filterProblems.length ? 'true' : 'false'} aria-describedby="query-filter-help query-filter-errors"
            onChange={(e) => { setFilterText(e.target.value); setFilterRefused(null); }} />
          <p className="help" id="query-filter-help">{t('filterHelp')}</p>
          <FilterFields fields={fields} t={t}
            onPick={(field) => { setFilterText(withField(filterText, field)); setFilterRefused(null); }} />
          <ul className="errors field-error" id="query-filter-errors" role={filterProblems.length ? 'alert' : undefined}>
            {filterProblems.map((p) => <li key={p}>{p}</li>)}
          </ul>
        </div>
        <button type="submit" disabled={busy || !query.trim() || !first || filterBad}>{t('search')}</button>
      </form>
      <div className={answers.length > 1 ? 'answers side-by-side' : 'answers'}>
        {answers.map((answer, i) => (
          <section key={`${answer.name}-${i}`} className="answer-column" data-tree={answer.name}>
            <h2>{answer.name}</h2>
            <Results answer={answer} catalog={catalog} t={t} lang={lang} shared={shared} />
          </section>
        ))}
      </div>
    </div>
  );
}
