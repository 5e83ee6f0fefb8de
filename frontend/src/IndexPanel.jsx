import React, { useEffect, useMemo, useState } from 'react';
import { defaultNode } from './catalog';
import { Failure } from './Failure';
import { NodeCard } from './NodeCard';
import { groupErrors, makeValidator, validateTree } from './validate';

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// Build an index of the tree on screen: a corpus path under the server's data root, or uploaded files, cut
// by the chunker chosen here (a form from its schema, checked like the tree) or by the service's default.
// The job's progress is polled from GET /jobs/{id} until it is done or failed.
const STAGES = ['reading the corpus', 'chunking', 'storing', 'fitting', 'embedding chunks', 'saving', 'publishing',
  'loading the embedding model', 'exporting the query encoder'];

const seconds = (s) => `${Math.round(s)} s`;

// What the build made of each file of its folder: the ones left out first (with why), then the ones read.
function FileOutcomes({ files, t }) {
  const rows = [
    ...files.failed.map((f) => ({ file: f.file, outcome: 'failed', text: t('fileFailed', { why: f.why }) })),
    ...files.skipped.map((f) => ({ file: f.file, outcome: 'skipped', text: t('fileSkipped', { why: f.why }) })),
    ...files.read.map((file) => ({ file, outcome: 'read', text: t('fileRead') })),
  ];
  return (
    <details className="job-files" open={files.failed.length + files.skipped.length > 0}>
      <summary>{t('filesSummary', { read: files.read.length, skipped: files.skipped.length,
        failed: files.failed.length })}</summary>
      <ul>
        {rows.map((r) => (
          <li key={`${r.outcome}:${r.file}`} data-outcome={r.outcome}><code>{r.file}</code> {r.text}</li>
        ))}
      </ul>
    </details>
  );
}

// The job's state, kept in view (fixed to the window's corner) while it runs, so a build started at the bottom of
// a long form is watched without scrolling: the stage in the page's language with its counts, the time since it
// started, the stage's estimate once its counter moved, a cancel button; a failed build in red with its error.
// Under the whole build's bar, the running stage's own: done / total where the stage counts, else an indeterminate
// (moving) bar, so a stage that cannot count (a model loading, its export) still shows that it works. Below, every
// stage the job has entered, in order (the job's ``stages``): a stage shorter than a poll is listed all the same.
export function JobStatus({ job, t, lang, onCancel, onQuery, onClose }) {
  const running = job.status === 'queued' || job.status === 'running';
  const worded = (s) => (STAGES.includes(s) ? t(`stage_${STAGES.indexOf(s)}`) : s);
  const stage = job.stage && worded(job.stage);
  return (
    <div className="job" role="status" aria-live="polite" data-status={job.status}>
      <strong>{t('jobStatus', { id: String(job.id).slice(0, 8), status: t(`status_${job.status}`) })}</strong>
      {job.status !== 'failed' && job.status !== 'cancelled' && (
        <div><progress max="1" value={job.progress ?? 0} /> {Math.round((job.progress ?? 0) * 100)} %</div>
      )}
      {stage && (
        <p className="job-stage">
          <span>{stage}</span>
          {job.total ? <span className="job-counts"> {job.done} / {job.total}</span> : null}
          {job.elapsed_s != null && <span> · {t('jobElapsed', { time: seconds(job.elapsed_s) })}</span>}
          {running && job.stage_eta_s != null && <span> · {t('stageEta', { time: seconds(job.stage_eta_s) })}</span>}
        </p>
      )}
      {running && stage && (job.total
        ? <progress className="stage-progress" max={job.total} value={job.done} aria-label={stage} />
        : <progress className="stage-progress" aria-label={stage} />)}
      {job.stages?.length > 0 && (
        <details className="job-stages">
          <summary>{t('stagesSummary', { count: job.stages.length })}</summary>
          <ol>{job.stages.map((s, i) => <li key={`${i}:${s}`}>{worded(s)}</li>)}</ol>
        </details>
      )}
      {job.error && <Failure summary={t('jobFailed')} detail={job.error} t={t} />}
      {job.status === 'cancelled' && <p>{t('jobCancelled')}</p>}
      {job.status === 'done' && (
        <p>
          {t('builtHint', { name: job.tree })}{' '}
          <button type="button" onClick={() => onQuery(job.tree)}>{t('goQuery')}</button>
        </p>
      )}
      {job.status === 'done' && job.files && <FileOutcomes files={job.files} t={t} />}
      <div className="buttons">
        {running && <button type="button" className="cancel" onClick={onCancel}>{t('cancelBuild')}</button>}
        {!running && <button type="button" onClick={onClose}>{t('closeStatus')}</button>}
      </div>
      {lang === 'en' && job.message && running ? <span className="visually-hidden">{job.message}</span> : null}
    </div>
  );
}

export function IndexPanel({ api, catalog, tree, valid, problems, t, lang, onBuilt, onQuery, loads }) {
  const [name, setName] = useState('my-tree');
  const [corpusPath, setCorpusPath] = useState('');
  const [files, setFiles] = useState([]);
  const [overwrite, setOverwrite] = useState(false);
  const [chunker, setChunker] = useState(null);
  const [job, setJob] = useState(null);
  const [problem, setProblem] = useState(null);
  const [taken, setTaken] = useState(null); // {name, saved}: the server answered 409

  // another tree loaded: the last build's outcome belongs to the old one (a running build stays in view)
  useEffect(() => {
    setProblem(null);
    setTaken(null);
    setJob((current) => (current && (current.status === 'queued' || current.status === 'running') ? current : null));
  }, [loads]);

  const chunkers = catalog.components.filter((c) => c.kind === 'chunker');
  const chunkerCheck = useMemo(() => makeValidator(catalog, 'chunker'), [catalog]);
  const chunkerErrors = useMemo(
    () => (chunker ? validateTree(catalog, chunkerCheck, chunker, lang) : []), [catalog, chunkerCheck, chunker, lang]);

  // `replace`: the user chose "Replace" after the server said the name is taken (409)
  const build = async (event, replace = false) => {
    event.preventDefault();
    setProblem(null);
    setTaken(null);
    setJob(null);
    const replacing = overwrite || replace;
    try {
      let started;
      if (files.length) {
        const form = new FormData();
        form.append('name', name);
        form.append('config', JSON.stringify(tree));
        if (chunker) form.append('chunker', JSON.stringify(chunker));
        if (replacing) form.append('overwrite', 'true');
        for (const file of files) form.append('corpus', file, file.name);
        started = await api.postForm('/trees', form);
      } else {
        started = await api.post('/trees', { name, config: tree, corpus_path: corpusPath, overwrite: replacing, chunker });
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
      if (error?.status === 409) {
        // the name is taken: by a saved tree (which the user may replace) or by a build still running; the page's
        // words say which, so the server's API advice ("send overwrite: true") is not shown
        const saved = await api.get('/trees').then((list) => list.some((t) => t.name === name), () => false);
        setTaken({ name, saved });
      } else {
        setProblem(error);
      }
    }
  };
  const running = job && (job.status === 'queued' || job.status === 'running');
  const cancel = () => api.post(`/jobs/${encodeURIComponent(job.id)}/cancel`, {}).then(setJob, setProblem);
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
        <input type="file" multiple accept=".jsonl,.txt,.md,.markdown,.pdf,.docx,.pptx,.html,.htm,.xhtml" onChange={(e) => setFiles([...e.target.files])} />
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
      <p className="help build-why">
        {!tree && t('needTree')}
        {tree && problems > 0 && t('invalidTree')}
        {tree && problems === 0 && !valid && t('treeChecking')}
        {tree && valid && chunkerErrors.length > 0 && t('invalidChunker')}
        {tree && valid && chunkerErrors.length === 0 && noCorpus && t('needCorpus')}
      </p>
      {job && <JobStatus job={job} t={t} lang={lang} onCancel={cancel} onQuery={onQuery} onClose={() => setJob(null)} />}
      {problem && <Failure error={problem} t={t} />}
      {taken && (
        <div className="error failure name-taken" role="alert" data-status="409">
          <p className="failure-summary">{t(taken.saved ? 'nameExists' : 'nameBusy', { name: taken.name })}</p>
          {taken.saved && (
            <button type="button" className="replace-tree" onClick={(e) => build(e, true)}>
              {t('replaceTree', { name: taken.name })}
            </button>
          )}
        </div>
      )}
    </form>
  );
}
