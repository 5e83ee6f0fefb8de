import React, { useCallback, useEffect, useState } from 'react';
import { Failure } from './Failure';
import { JobStatus } from './IndexPanel';
import { LearnPanel } from './LearnPanel';
import { describeFailure } from './i18n';

// A saved tree's documents (docs/web.md, docs/updating.md): a page of them at a time (GET
// /trees/{name}/documents), files added as a job (POST .../documents/upload, polled from GET /jobs/{id} and shown
// by the build's own status box), and a document removed by its id (DELETE .../documents/{id}) after a
// confirmation. The metadata typed here is written as the upload's metadata.jsonl sidecar, one line per text
// file, as a folder corpus on disk carries it; a .jsonl corpus brings its own metadata on its lines.

const PAGE = 20;
const SIDECAR = 'metadata.jsonl';
const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
// the update's own stages (api.update_tree), worded in the page's language before the build's box shows them
const UPDATE_STAGES = { loading: 'docsStage_loading', updating: 'docsStage_updating' };

// The metadata box's text as an object, or the problem with it (empty: no metadata).
export function parseMetadata(text, t) {
  if (!text.trim()) return { metadata: null, problem: null };
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { metadata: null, problem: t('docsMetadataNotJson', { error: error.message }) };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { metadata: null, problem: t('docsMetadataNotObject') };
  }
  return { metadata: value, problem: null };
}

function DocumentRows({ page, t, onRemove }) {
  if (page.documents.length === 0) return <p>{t('docsNone')}</p>;
  return (
    <table className="documents-table">
      <thead>
        <tr><th>{t('docsId')}</th><th>{t('docsTitle')}</th><th>{t('docsMetadata')}</th><th>{t('docsChunks')}</th><th /></tr>
      </thead>
      <tbody>
        {page.documents.map((d) => (
          <tr key={d.id} data-document={d.id}>
            <td><code>{d.id}</code></td>
            <td>{d.title}</td>
            <td><code className="documents-metadata">{Object.keys(d.metadata).length ? JSON.stringify(d.metadata) : ''}</code></td>
            <td>{d.chunks}</td>
            <td>
              <button type="button" onClick={() => onRemove(d.id)}
                aria-label={t('docsRemoveOne', { id: d.id })}>{t('docsRemove')}</button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// sourceFolder: the folder under the data root the tree was built from (GET /trees' source_folder), offered in
// the Sync box so that a sync needs no typing; '' when the tree records none (built from uploads or JSONL).
export function DocumentsPanel({ api, name, t, lang, sourceFolder, onChanged, onQuery, onClose }) {
  const base = `/trees/${encodeURIComponent(name)}/documents`;
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState(null);
  const [listFailure, setListFailure] = useState(null);
  const [files, setFiles] = useState([]);
  const [metadataText, setMetadataText] = useState('');
  const [job, setJob] = useState(null);
  const [addFailure, setAddFailure] = useState(null);
  const [removeId, setRemoveId] = useState('');
  const [confirming, setConfirming] = useState(null);
  const [removeFailure, setRemoveFailure] = useState(null);
  const [removed, setRemoved] = useState(null);
  const [syncPath, setSyncPath] = useState(sourceFolder);
  const [syncJob, setSyncJob] = useState(null);
  const [syncFailure, setSyncFailure] = useState(null);

  const load = useCallback(() => api.get(`${base}?offset=${offset}&limit=${PAGE}`).then(
    (body) => { setPage(body); setListFailure(null); }, setListFailure), [api, base, offset]);
  useEffect(() => { load(); }, [load]);
  useEffect(() => { setOffset(0); setJob(null); setRemoved(null); setConfirming(null); }, [name]);
  useEffect(() => { setSyncPath(sourceFolder); }, [name, sourceFolder]);

  const { metadata, problem } = parseMetadata(metadataText, t);
  const jsonlChosen = files.some((f) => /\.jsonl(\.gz)?$/.test(f.name));
  const metadataProblem = problem || (metadata && jsonlChosen ? t('docsMetadataWithJsonl') : null);
  const running = job && (job.status === 'queued' || job.status === 'running');

  const add = async (event) => {
    event.preventDefault();
    setAddFailure(null);
    setJob(null);
    try {
      const form = new FormData();
      for (const file of files) form.append('corpus', file, file.name);
      if (metadata) {
        const lines = files.map((f) => JSON.stringify({ file: f.name, metadata }));
        form.append('corpus', new Blob([`${lines.join('\n')}\n`], { type: 'application/jsonl' }), SIDECAR);
      }
      const started = await api.postForm(`${base}/upload`, form);
      let state = { id: started.job_id, status: 'queued', progress: 0, tree: name };
      setJob(state);
      while (state.status === 'queued' || state.status === 'running') {
        await sleep(400);
        state = await api.get(`/jobs/${encodeURIComponent(started.job_id)}`);
        setJob(state);
      }
      if (state.status === 'done') { load(); onChanged(); }
    } catch (error) {
      setAddFailure(error);
    }
  };

  // A tree read from a folder under the server's data root brought in line with it (POST /trees/{name}/sync):
  // new files added, changed ones replaced, gone ones removed, as `dashrag sync` does (docs/documents.md).
  const sync = async (event) => {
    event.preventDefault();
    setSyncFailure(null);
    setSyncJob(null);
    try {
      const started = await api.post(`/trees/${encodeURIComponent(name)}/sync`, { corpus_path: syncPath.trim() });
      let state = { id: started.job_id, status: 'queued', progress: 0, tree: name };
      setSyncJob(state);
      while (state.status === 'queued' || state.status === 'running') {
        await sleep(400);
        state = await api.get(`/jobs/${encodeURIComponent(started.job_id)}`);
        setSyncJob(state);
      }
      if (state.status === 'done') { load(); onChanged(); }
    } catch (error) {
      setSyncFailure(error);
    }
  };
  const syncRunning = syncJob && (syncJob.status === 'queued' || syncJob.status === 'running');
  const shownSync = syncJob && UPDATE_STAGES[syncJob.stage] ? { ...syncJob, stage: t(UPDATE_STAGES[syncJob.stage]) }
    : syncJob;

  const remove = async () => {
    const id = confirming;
    setConfirming(null);
    try {
      const counts = await api.del(`${base}/${encodeURIComponent(id)}`);
      setRemoved({ id, counts });
      setRemoveId('');
      setRemoveFailure(null);
      load();
      onChanged();
    } catch (error) {
      setRemoveFailure(error);
    }
  };
  const askRemove = (id) => { setRemoveFailure(null); setRemoved(null); setConfirming(id); };
  const removeError = removeFailure ? describeFailure(removeFailure, t) : null;
  const shownJob = job && UPDATE_STAGES[job.stage] ? { ...job, stage: t(UPDATE_STAGES[job.stage]) } : job;

  return (
    <section className="documents-panel" data-tree={name} aria-labelledby="documents-title">
      <h2 id="documents-title">{t('docsTitleOf', { name })}</h2>
      {listFailure && <Failure error={listFailure} t={t} />}
      {page && (
        <>
          <p className="documents-count" aria-live="polite">
            {t('docsCount', { total: page.total })}
            {page.total > 0 && ` · ${t('docsShowing', { from: page.offset + 1, to: page.offset + page.documents.length })}`}
          </p>
          <DocumentRows page={page} t={t} onRemove={askRemove} />
          <div className="buttons">
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>{t('docsPrevious')}</button>
            <button type="button" disabled={offset + PAGE >= page.total} onClick={() => setOffset(offset + PAGE)}>{t('docsNext')}</button>
          </div>
        </>
      )}

      <form className="documents-add" onSubmit={add}>
        <h3>{t('docsAdd')}</h3>
        <label>{t('docsFiles')}{' '}
          <input type="file" multiple accept=".jsonl,.txt,.md,.markdown,.pdf,.docx,.pptx,.html,.htm,.xhtml" onChange={(e) => setFiles([...e.target.files])} />
        </label>
        <label htmlFor="documents-metadata">{t('docsMetadataLabel')}</label>
        <textarea id="documents-metadata" rows="3" value={metadataText} placeholder={t('docsMetadataPlaceholder')}
          aria-invalid={metadataProblem ? 'true' : 'false'} aria-describedby="documents-metadata-help documents-metadata-error"
          onChange={(e) => setMetadataText(e.target.value)} />
        <p className="help" id="documents-metadata-help">{t('docsMetadataHelp')}</p>
        <p className="field-error" id="documents-metadata-error" role={metadataProblem ? 'alert' : undefined}>{metadataProblem}</p>
        <button type="submit" disabled={files.length === 0 || Boolean(metadataProblem) || running}>{t('docsAddButton')}</button>
        {job && <JobStatus job={shownJob} t={t} lang={lang} onQuery={onQuery} onClose={() => setJob(null)}
          onCancel={() => api.post(`/jobs/${encodeURIComponent(job.id)}/cancel`, {}).then(setJob, setAddFailure)} />}
        {job && job.status === 'done' && job.counts && (
          <p className="documents-counts" role="status">{t('docsCounts', job.counts)}</p>
        )}
        {addFailure && <Failure error={addFailure} t={t} />}
      </form>

      <form className="documents-sync" onSubmit={sync}>
        <h3>{t('docsSync')}</h3>
        <label htmlFor="documents-sync-path">{t('docsSyncPath')}</label>{' '}
        <input id="documents-sync-path" type="text" value={syncPath} placeholder={t('corpusPlaceholder')}
          aria-describedby="documents-sync-help" onChange={(e) => setSyncPath(e.target.value)} />
        {' '}<button type="submit" disabled={!syncPath.trim() || syncRunning}>{t('docsSyncButton')}</button>
        <p className="help" id="documents-sync-help">
          {sourceFolder && <span className="documents-sync-source">{t('docsSyncSource', { folder: sourceFolder })} </span>}
          {t('docsSyncHelp')}
        </p>
        {syncJob && <JobStatus job={shownSync} t={t} lang={lang} onQuery={onQuery} onClose={() => setSyncJob(null)}
          onCancel={() => api.post(`/jobs/${encodeURIComponent(syncJob.id)}/cancel`, {}).then(setSyncJob, setSyncFailure)} />}
        {syncJob && syncJob.status === 'done' && syncJob.counts && (
          <p className="documents-counts" role="status">{t('docsSyncCounts', syncJob.counts)}</p>
        )}
        {syncFailure && <Failure error={syncFailure} t={t} />}
      </form>

      <LearnPanel api={api} name={name} t={t} onBuilt={onChanged} />

      <form className="documents-remove" onSubmit={(e) => { e.preventDefault(); askRemove(removeId.trim()); }}>
        <h3>{t('docsRemoveTitle')}</h3>
        <label htmlFor="documents-remove-id">{t('docsId')}</label>{' '}
        <input id="documents-remove-id" type="text" value={removeId} aria-invalid={removeError ? 'true' : 'false'}
          aria-describedby="documents-remove-error" onChange={(e) => { setRemoveId(e.target.value); setRemoveFailure(null); }} />
        {' '}<button type="submit" disabled={!removeId.trim()}>{t('docsRemove')}</button>
        <div className="field-error" id="documents-remove-error" role={removeError ? 'alert' : undefined}>
          {removeError && (
            <>
              <span className="failure-summary">{removeError.summary}</span>
              {removeError.detail && <> <code>{removeError.detail}</code></>}
            </>
          )}
        </div>
        {removed && <p className="documents-counts" role="status">{t('docsRemoved', { id: removed.id, ...removed.counts })}</p>}
      </form>

      {confirming !== null && (
        <div className="documents-confirm" role="alertdialog" aria-labelledby="documents-confirm-text">
          <p id="documents-confirm-text">{t('docsConfirm', { id: confirming, name })}</p>
          <div className="buttons">
            <button type="button" className="danger" onClick={remove}>{t('docsConfirmYes')}</button>
            <button type="button" onClick={() => setConfirming(null)}>{t('docsConfirmNo')}</button>
          </div>
        </div>
      )}
      <div className="buttons"><button type="button" onClick={onClose}>{t('closeStatus')}</button></div>
    </section>
  );
}
