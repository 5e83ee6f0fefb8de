import React, { useCallback, useEffect, useMemo, useState } from 'react';
import { api } from './api';
import { Failure } from './Failure';
import { canonicalTree, defaultNode, loadCatalog } from './catalog';
import { LANGUAGES, translator } from './i18n';
import { IndexPanel } from './IndexPanel';
import { JsonPanel } from './JsonPanel';
import { NodeCard } from './NodeCard';
import { Picker } from './Picker';
import { ProblemList, useReveal } from './Problems';
import { QueryPanel } from './QueryPanel';
import { TokenField } from './TokenField';
import { groupErrors, makeValidator, validateTree } from './validate';

const SERVER_DELAY_MS = 350;
const TREES_POLL_MS = 5000;

function initialLanguage() {
  const saved = window.localStorage.getItem('dashrag-lang');
  if (LANGUAGES.includes(saved)) return saved;
  return (navigator.language || 'en').startsWith('es') ? 'es' : 'en';
}

// Ask the server about the tree, a moment after the last change; its errors show at the same paths. A call
// that fails (no token, server gone) is a `failure`, shown as such, and the tree counts as unchecked.
function useServerErrors(tree, session) {
  const [state, setState] = useState({ tree: null, errors: [], failure: null });
  useEffect(() => {
    if (!tree) return undefined;
    let current = true;
    const timer = setTimeout(() => {
      api.post('/trees/validate', tree).then(
        (body) => current && setState({
          tree, errors: (body.errors || []).map((e) => ({ ...e, source: 'server' })), failure: null }),
        (error) => current && setState({ tree, errors: [], failure: error }),
      );
    }, SERVER_DELAY_MS);
    return () => { current = false; clearTimeout(timer); };
  }, [tree, session]);
  return state.tree === tree
    ? { checking: false, errors: state.errors, failure: state.failure }
    : { checking: Boolean(tree), errors: [], failure: null };
}

export function App() {
  const [lang, setLang] = useState(initialLanguage);
  const [tab, setTab] = useState('build');
  const [catalog, setCatalog] = useState(null);
  const [failure, setFailure] = useState(null);
  const [tree, setTree] = useState(null);
  const [trees, setTrees] = useState([]);
  const [choosingRoot, setChoosingRoot] = useState(false);
  const [presets, setPresets] = useState([]);
  const [queried, setQueried] = useState(null); // a tree just built, chosen on the query tab
  const [session, setSession] = useState(0); // counts token changes: everything is asked for again
  const [loads, setLoads] = useState(0); // counts trees loaded (preset, JSON, new root): clears the last build's outcome
  const loadTree = (node) => { setTree(node); setLoads((n) => n + 1); };
  const [reveal, setReveal] = useState(null); // a problem link clicked: {path, n}, opens the nodes on its way
  useReveal(reveal);
  const t = useMemo(() => translator(lang), [lang]);

  useEffect(() => {
    setFailure(null);
    loadCatalog(api).then(setCatalog, setFailure);
    api.get('/presets').then(setPresets, setFailure);
  }, [session]);
  const refreshTrees = useCallback(() => api.get('/trees').then(setTrees, setFailure), []);
  useEffect(() => { refreshTrees(); }, [refreshTrees, session]);
  // the server notices trees saved, replaced or removed in --trees by itself; the list follows while it is shown
  useEffect(() => {
    if (tab !== 'query') return undefined;
    const timer = setInterval(refreshTrees, TREES_POLL_MS);
    return () => clearInterval(timer);
  }, [tab, refreshTrees]);
  useEffect(() => {
    document.documentElement.lang = lang;
    document.title = t('title');
    window.localStorage.setItem('dashrag-lang', lang);
  }, [lang, t]);

  const validateFn = useMemo(() => (catalog ? makeValidator(catalog) : null), [catalog]);
  const clientErrors = useMemo(
    () => (catalog && tree ? validateTree(catalog, validateFn, tree, lang) : []), [catalog, validateFn, tree, lang]);
  const server = useServerErrors(tree, session);
  // the server's answer adds what the page's own checks did not find at that path (the same problem twice,
  // once in each wording, would only be noise)
  const clientPaths = new Set(clientErrors.map((e) => e.path));
  const errors = [...clientErrors, ...server.errors.filter((e) => !clientPaths.has(e.path))];
  const errorsByPath = groupErrors(errors);
  const valid = Boolean(tree) && clientErrors.length === 0 && !server.checking && !server.failure
    && server.errors.length === 0;

  const retrievers = catalog ? catalog.components.filter((c) => c.kind === 'retriever').map((c) => c.name) : [];
  return (
    <>
      <header className="top">
        <h1>{t('title')}</h1>
        <nav aria-label="tabs">
          <button type="button" aria-pressed={tab === 'build'} onClick={() => setTab('build')}>{t('tabBuild')}</button>
          <button type="button" aria-pressed={tab === 'query'} onClick={() => { setTab('query'); refreshTrees(); }}>{t('tabQuery')}</button>
        </nav>
        <TokenField t={t} onChange={() => setSession((n) => n + 1)} />
        <label className="language">{t('language')}{' '}
          <select value={lang} onChange={(e) => setLang(e.target.value)}>
            <option value="en">English</option>
            <option value="es">Español</option>
          </select>
        </label>
      </header>
      {failure && <Failure error={failure} t={t} />}
      {!catalog ? <p>{t('loading')}</p> : (
        <main>
          <div hidden={tab !== 'build'} className="build">
            <div className="editor">
              <div className="buttons">
                <button type="button" onClick={() => setChoosingRoot(true)}>{tree ? t('newTree') : t('chooseRoot')}</button>
              </div>
              {!tree && <p className="help">{t('rootHint')}</p>}
              {tree && (
                <div className="status" aria-live="polite">
                  {errors.length > 0 && (
                    <ProblemList catalog={catalog} tree={tree} errors={errors} t={t} lang={lang}
                      onReveal={(path) => setReveal((last) => ({ path, n: (last?.n ?? 0) + 1 }))} />
                  )}
                  {errors.length === 0 && !server.checking && !server.failure && <span className="ok">{t('noErrors')}</span>}
                  {server.checking && <span className="checking"> {t('serverChecking')}</span>}
                  {server.failure && <Failure error={server.failure} t={t} />}
                </div>
              )}
              {tree && (
                <NodeCard catalog={catalog} node={tree} path="" accepts={retrievers} lang={lang} t={t}
                  errorsByPath={errorsByPath} onChange={setTree} reveal={reveal} />
              )}
            </div>
            <aside className="side">
              <JsonPanel tree={tree} t={t} onLoad={(loaded) => loadTree(canonicalTree(catalog, loaded))} presets={presets} />
              <IndexPanel api={api} catalog={catalog} tree={tree} valid={valid} problems={errors.length} t={t} lang={lang}
                onBuilt={refreshTrees} loads={loads}
                onQuery={(name) => { setQueried(name); setTab('query'); refreshTrees(); }} />
            </aside>
          </div>
          <div hidden={tab !== 'query'}>
            <QueryPanel api={api} catalog={catalog} t={t} lang={lang} trees={trees} refreshTrees={refreshTrees}
              chosen={queried} />
          </div>
          {choosingRoot && (
            <Picker catalog={catalog} accepts={retrievers} lang={lang} t={t} title={t('chooseRoot')}
              onClose={() => setChoosingRoot(false)}
              onPick={(name) => { setChoosingRoot(false); loadTree(defaultNode(catalog, name)); }} />
          )}
        </main>
      )}
    </>
  );
}
