import React, { useMemo, useState } from 'react';
import { defaultNode } from './catalog';
import { Failure } from './Failure';
import { NodeCard } from './NodeCard';
import { groupErrors, makeValidator, validateTree } from './validate';

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// Build an index of the tree on screen: a corpus path under the server's data root, or uploaded files, cut
// by the chunker chosen here (a form from its schema, checked like the tree) or by the service's default.
// The job's progress is polled from GET /jobs/{id} until it is done or failed.
export function IndexPanel({ api, catalog, tree, valid, problems, t, lang, onBuilt, onQuery }) {
  const [name, setName] = useState('my-tree');
  const [corpusPath, setCorpusPath] = useState('');
  const [files, setFiles] = useState([]);
  const [overwrite, setOverwrite] = useState(false);
  const [chunker, setChunker] = useState(null);
  const [job, setJob] = useState(null);
  const [problem, setProblem] = useState(null);

  const chunkers = catalog.components.filter((c) => c.kind === 'chunker');
  const chunkerCheck = useMemo(() => makeValidator(catalog, 'chunker'), [catalog]);
  const chunkerErrors = useMemo(
    () => (chunker ? validateTree(catalog, chunkerCheck, chunker, lang) : []), [catalog, chunkerCheck, chunker, lang]);

  const build = async (event) => {
    event.preventDefault();
    setProblem(null);
    setJob(null);
    try {
      let started;
      if (files.length) {
        const form = new FormData();
        form.append('name', name);
        form.append('config', JSON.stringify(tree));
        if (chunker) form.append('chunker', JSON.stringify(chunker));
        if (overwrite) form.append('overwrite', 'true');
        for (const file of files) form.append('corpus', file, file.name);
        started = await api.postForm('/trees', form);
      } else {
        started = await api.post('/trees', { name, config: tree, corpus_path: corpusPath, overwrite, chunker });
      }
      let state = { id: started.job_id, status: 'queued', progress: 0 };
      setJob(state);
      while (state.status === 'queued' || state.status === 'running') {
        await sleep(400);
        state = await api.get(`/jobs/${encodeURIComponent(started.job_id)}`);
        setJob(state);
      }
      if (state.status === 'done') onBuilt(state.tree);
    } catch (error) {
      setProblem(error);
    }
  };
  const running = job && (job.status === 'queued' || job.status === 'running');
  const noCorpus = !corpusPath && files.length === 0;
  const blocked = !tree || !valid || chunkerErrors.length > 0;
  return (
    <form className="index-panel" onSubmit={build}>
      <h2>{t('indexTitle')}</h2>
      <label>{t('treeName')}{' '}
        <input type="text" value={name} required pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" onChange={(e) => setName(e.target.value)} />
      </label>
      <label>{t('corpusPath')}{' '}
        <input type="text" value={corpusPath} onChange={(e) => setCorpusPath(e.target.value)} placeholder={t('corpusPlaceholder')} />
      </label>
      <label>{t('corpusFiles')}{' '}
        <input type="file" multiple accept=".jsonl,.txt,.md" onChange={(e) => setFiles([...e.target.files])} />
      </label>
      <label>{t('chunker')}{' '}
        <select value={chunker ? chunker.component : ''}
          onChange={(e) => setChunker(e.target.value ? defaultNode(catalog, e.target.value) : null)}>
          <option value="">{t('chunkerDefault')}</option>
          {chunkers.map((c) => (
            <option key={c.name} value={c.name}>{(c.display[lang] || c.display.en).name} ({c.name})</option>
          ))}
        </select>
      </label>
      {chunker && (
        <div className="chunker">
          <NodeCard catalog={catalog} node={chunker} path="" lang={lang} t={t} idBase="chunker"
            errorsByPath={groupErrors(chunkerErrors)} onChange={setChunker} />
        </div>
      )}
      <label><input type="checkbox" checked={overwrite} onChange={(e) => setOverwrite(e.target.checked)} /> {t('overwrite')}</label>
      <button type="submit" disabled={blocked || running || noCorpus}>{t('build')}</button>
      {tree && problems > 0 && <p className="help">{t('invalidTree')}</p>}
      {tree && valid && noCorpus && <p className="help">{t('needCorpus')}</p>}
      {job && (
        <div className="job" aria-live="polite" data-status={job.status}>
          <progress max="1" value={job.progress ?? 0} />
          {' '}{t('jobStatus', { id: String(job.id).slice(0, 8), status: t(`status_${job.status}`) })} · {Math.round((job.progress ?? 0) * 100)} %
          {/* the server words its progress in English: shown as is on the English page */}
          {lang === 'en' && job.message ? ` — ${job.message}` : ''}
          {job.error && <Failure summary={t('jobFailed')} detail={job.error} t={t} />}
          {job.status === 'done' && (
            <p>
              {t('builtHint', { name: job.tree })}{' '}
              <button type="button" onClick={() => onQuery(job.tree)}>{t('goQuery')}</button>
            </p>
          )}
        </div>
      )}
      {problem && <Failure error={problem} t={t} />}
    </form>
  );
}
