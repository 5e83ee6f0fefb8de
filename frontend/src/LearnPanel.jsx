import React, { useState } from 'react';
import { Failure } from './Failure';

// "Learn from these documents" (docs/finetuning.md, "From the service and the page"): POST /trees/{name}/learn
// starts `dashrag finetune pipeline --corpus` on the tree's own documents as a job within a time budget; the
// job is polled from GET /jobs/{id} and its report shown: which tree it chose (the learned one only when it beat
// the base on held-out pseudo-queries) and why. "Use the learned tree" then builds a new tree from what it chose
// (POST /trees/{name}/learned/build: the build job of POST /trees), listed with the others when it is done.
// Everything shown is text nodes (React escapes it).

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
// the job's stages (service/build_worker.py LEARN_STAGES), worded in the page's language
const LEARN_STAGES = {
  'reading the corpus': 'learnStage_read', 'learning: mining hard negatives': 'learnStage_mine',
  'learning: embedding with the base model': 'learnStage_embedBase', 'learning: training': 'learnStage_train',
  'learning: embedding with the learned model': 'learnStage_embed', 'learning: tuning the tree': 'learnStage_tune',
};

const figure = (value) => (typeof value === 'number' ? value.toFixed(4) : '');
const minutes = (s) => (s / 60).toFixed(1);

export function LearnReport({ report, t }) {
  const heldOut = report.held_out;
  return (
    <div className="learn-report" data-shipped={report.shipped}>
      <p role="status"><strong>{t(report.shipped === 'learned' ? 'learnShippedLearned' : 'learnShippedBase')}</strong></p>
      <p className="learn-reason">{report.reason}</p>
      <table className="learn-figures">
        <caption>{t('learnFigures', { queries: heldOut.queries, metric: heldOut.metric })}</caption>
        <thead><tr><th /><th>{t('learnBase')}</th><th>{t('learnLearned')}</th></tr></thead>
        <tbody>
          <tr><th scope="row">{t('learnHybrid')}</th><td>{figure(heldOut.base)}</td><td>{figure(heldOut.learned)}</td></tr>
          <tr><th scope="row">{t('learnDense')}</th><td>{figure(heldOut.dense_alone.base)}</td><td>{figure(heldOut.dense_alone.learned)}</td></tr>
        </tbody>
      </table>
      <p>{t('learnTraining', { steps: report.training.steps, pairs: report.training.pairs_trained,
        wall: minutes(report.budget.wall_s), budget: report.budget.budget_s ? minutes(report.budget.budget_s) : '∞' })}</p>
      <details>
        <summary>{t('learnPlan')}</summary>
        <ul>{report.training.plan.map((reason) => <li key={reason}>{reason}</li>)}</ul>
      </details>
    </div>
  );
}

const pollJob = async (api, jobId, setJob) => {
  let state = { id: jobId, status: 'queued', progress: 0 };
  setJob(state);
  while (state.status === 'queued' || state.status === 'running') {
    await sleep(500);
    state = await api.get(`/jobs/${encodeURIComponent(jobId)}`);
    setJob(state);
  }
  return state;
};

// A new tree from the learn job's preset, under a name the user gives (the source tree is never replaced).
export function UseLearnedTree({ api, name, shipped, t, onBuilt }) {
  const [newName, setNewName] = useState(`${name}-learned`);
  const [job, setJob] = useState(null);
  const [failure, setFailure] = useState(null);
  const running = job && (job.status === 'queued' || job.status === 'running');

  const build = async () => {
    setFailure(null);
    setJob(null);
    try {
      const started = await api.post(`/trees/${encodeURIComponent(name)}/learned/build`, { name: newName.trim() });
      const state = await pollJob(api, started.job_id, setJob);
      if (state.status === 'done') onBuilt();
    } catch (error) {
      setFailure(error);
    }
  };

  return (
    <div className="learn-use">
      <label>{t('learnUseName')}{' '}
        <input type="text" value={newName} onChange={(e) => setNewName(e.target.value)} required />
      </label>{' '}
      <button type="button" disabled={Boolean(running) || !newName.trim()} onClick={build}>
        {t(shipped === 'learned' ? 'learnUseLearned' : 'learnUseBase')}
      </button>
      {job && (
        <p className="learn-use-job" role="status" aria-live="polite" data-status={job.status}>
          {job.status === 'done' ? t('learnUseBuilt', { tree: job.tree })
            : job.status === 'failed' ? '' : `${Math.round((job.progress ?? 0) * 100)} %`}
        </p>
      )}
      {job && job.error && <Failure summary={t('learnUseFailed')} detail={job.error} t={t} />}
      {failure && <Failure error={failure} t={t} />}
    </div>
  );
}

export function LearnPanel({ api, name, t, onBuilt }) {
  const [budget, setBudget] = useState('30');
  const [steps, setSteps] = useState('');
  const [tokens, setTokens] = useState('256');
  const [job, setJob] = useState(null);
  const [failure, setFailure] = useState(null);
  const running = job && (job.status === 'queued' || job.status === 'running');

  const learn = async (event) => {
    event.preventDefault();
    setFailure(null);
    setJob(null);
    const body = { time_budget_minutes: Number(budget), max_seq_length: Number(tokens) };
    if (steps.trim()) body.max_steps = Number(steps);
    try {
      const started = await api.post(`/trees/${encodeURIComponent(name)}/learn`, body);
      await pollJob(api, started.job_id, setJob);
    } catch (error) {
      setFailure(error);
    }
  };
  const stage = job && job.stage ? (LEARN_STAGES[job.stage] ? t(LEARN_STAGES[job.stage]) : job.stage) : null;

  return (
    <form className="documents-learn" onSubmit={learn}>
      <h3>{t('learnTitle')}</h3>
      <p className="help" id="documents-learn-help">{t('learnHelp')}</p>
      <label>{t('learnBudget')}{' '}
        <input type="number" min="1" step="any" value={budget} onChange={(e) => setBudget(e.target.value)} required />
      </label>{' '}
      <label>{t('learnSteps')}{' '}
        <input type="number" min="1" step="1" value={steps} onChange={(e) => setSteps(e.target.value)} />
      </label>{' '}
      <label>{t('learnTokens')}{' '}
        <input type="number" min="8" max="512" step="1" value={tokens} onChange={(e) => setTokens(e.target.value)} required />
      </label>{' '}
      <button type="submit" disabled={Boolean(running)} aria-describedby="documents-learn-help">{t('learnButton')}</button>
      {job && (
        <div className="job" role="status" aria-live="polite" data-status={job.status}>
          {job.status !== 'failed' && job.status !== 'cancelled' && (
            <div><progress max="1" value={job.progress ?? 0} /> {Math.round((job.progress ?? 0) * 100)} %</div>
          )}
          {running && stage && <p className="job-stage">{stage}{job.total ? ` ${job.done} / ${job.total}` : ''}</p>}
          {running && (
            <button type="button" className="cancel"
              onClick={() => api.post(`/jobs/${encodeURIComponent(job.id)}/cancel`, {}).then(setJob, setFailure)}>
              {t('learnCancel')}
            </button>
          )}
          {job.error && <Failure summary={t('learnFailed')} detail={job.error} t={t} />}
          {job.status === 'cancelled' && <p>{t('learnCancelled')}</p>}
          {job.status === 'done' && job.report && <LearnReport report={job.report} t={t} />}
          {job.status === 'done' && job.report && (
            <UseLearnedTree api={api} name={name} shipped={job.report.shipped} t={t} onBuilt={onBuilt} />
          )}
        </div>
      )}
      {failure && <Failure error={failure} t={t} />}
    </form>
  );
}
