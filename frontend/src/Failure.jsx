import React from 'react';
import { describeFailure } from './i18n';

// A failure in the page's language, with the server's own words beside it, verbatim (React escapes them).
// Either `error` (an ApiError or any Error) or a `summary` with the server's `detail`.
export function Failure({ error, summary, detail, t }) {
  const said = error ? describeFailure(error, t) : { summary, detail };
  return (
    <div className="error failure" role="alert" data-status={error?.status ?? ''}>
      <p className="failure-summary">{said.summary}</p>
      {said.detail && (
        <p className="server-detail">{t('serverDetail')}: <code>{said.detail}</code></p>
      )}
    </div>
  );
}
