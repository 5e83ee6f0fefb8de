import React, { useState } from 'react';

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// Build an index of the tree on screen: a corpus path under the server's data root, or uploaded files.
// The job's progress is polled from GET /jobs/{id} until it is done or failed.
export function IndexPanel({ api, tree, valid, t, onBuilt }) {
  const [name, setName] = useState('my-tree');
  const [corpusPath, setCorpusPath] = useState('');
  const [files, setFiles] = useState([]);
  const [overwrite, setOverwrite] = useState(false);
  const [job, setJob] = useState(null);
  const [problem, setProblem] = useState(null);

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
        if (overwrite) form.append('overwrite', 'true');
        for (const file of files) form.append('corpus', file, file.name);
        started = await api.postForm('/trees', form);
      } else {
        started = await api.post('/trees', { name, config: tree, corpus_path: corpusPath, overwrite });
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
      setProblem(error.message);
    }
  };
  const running = job && (job.status === 'queued' || job.status === 'running');
  return (
    <form className="index-panel" onSubmit={build}>
      <h2>{t('indexTitle')}</h2>
      <label>{t('treeName')}{' '}
        <input type="text" value={name} required pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" onChange={(e) => setName(e.target.value)} />
      </label>
      <label>{t('corpusPath')}{' '}
        <input type="text" value={corpusPath} onChange={(e) => setCorpusPath(e.target.value)} placeholder="corpus" />
      </label>
      <label>{t('corpusFiles')}{' '}
        <input type="file" multiple accept=".jsonl,.txt,.md" onChange={(e) => setFiles([...e.target.files])} />
      </label>
      <label><input type="checkbox" checked={overwrite} onChange={(e) => setOverwrite(e.target.checked)} /> {t('overwrite')}</label>
      <button type="submit" disabled={!tree || !valid || running || (!corpusPath && files.length === 0)}>{t('build')}</button>
      {job && (
        <div className="job" aria-live="polite" data-status={job.status}>
          <progress max="1" value={job.progress ?? 0} />
          {' '}{t('jobStatus', { id: job.id, status: job.status })}{job.message ? ` — ${job.message}` : ''}
          {job.error && <p className="error" role="alert">{job.error}</p>}
        </div>
      )}
      {problem && <p className="error" role="alert">{t('failed', { error: problem })}</p>}
    </form>
  );
}
