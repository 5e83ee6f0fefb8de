import React from 'react';
import { representation } from './catalog';

function countIn(node) {
  if (node.selection && typeof node.selection.received === 'number') return node.selection.received;
  if (node.children && node.children.length) return node.children.reduce((n, c) => n + (c.output || []).length, 0);
  return null;
}

function scoreText(score) {
  return typeof score === 'number' ? score.toFixed(4) : String(score);
}

function Attempts({ selection, t }) {
  if (!selection || !Array.isArray(selection.attempts)) return null;
  return (
    <div className="attempts">
      <p><strong>{t('selection')}:</strong> {selection.summary}</p>
      {selection.attempts.length > 0 && (
        <table>
          <caption>{t('attempts')}</caption>
          <thead><tr><th>#</th><th>{t('window')}</th><th>{t('verdict')}</th><th>ms</th></tr></thead>
          <tbody>
            {selection.attempts.map((a, i) => (
              <tr key={i} className={a.verdict?.accepted ? 'accepted' : 'rejected'}>
                <td>{a.trial}</td>
                <td>{a.window}</td>
                <td>{a.verdict?.accepted ? `✓ ${(a.verdict.indices || []).join(', ')}` : `✗ ${a.verdict?.problem || ''}`}</td>
                <td>{a.latency_ms}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

// One trace node as a collapsible <details>: component, representation, time, chunks in and out, the
// top scores, and for the LLM reranker every attempt with its verdict. Children nest inside.
export function TraceNode({ node, catalog, t, lang, depth = 0 }) {
  const out = node.output || [];
  const inCount = countIn(node);
  const rep = representation(catalog, { component: node.component, params: node.params || {} }, lang);
  return (
    <details className="trace-node" open={depth === 0}>
      <summary>
        <strong>{node.component}</strong>
        {rep && <span className="trace-rep"> · {rep}</span>}
        <span className="trace-stats">
          {' · '}{t('elapsed', { ms: Number(node.elapsed_ms).toFixed(1) })}
          {inCount !== null && ` · ${t('traceIn')} ${inCount}`}
          {` · ${t('traceOut')} ${out.length}`}
        </span>
      </summary>
      <div className="trace-body">
        {out.length > 0 && (
          <ol className="trace-output">
            {out.slice(0, 10).map((c, i) => (
              <li key={`${c.chunk_id}-${i}`}>
                {t('chunk')} {c.chunk_id} ({t('document')} {String(c.document_id)}#{c.position}) {t('score')} {scoreText(c.score)}
              </li>
            ))}
          </ol>
        )}
        <Attempts selection={node.selection} t={t} />
        {(node.children || []).map((child, i) => (
          <TraceNode key={i} node={child} catalog={catalog} t={t} lang={lang} depth={depth + 1} />
        ))}
      </div>
    </details>
  );
}
