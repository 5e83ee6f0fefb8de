import React, { useState } from 'react';
import { readToken, saveToken } from './api';

// The bearer token of a service started with auth_token_var: typed here, kept in sessionStorage only
// (api.js), sent with every call. Saving or forgetting it reloads what the page asked the server for.
export function TokenField({ t, onChange }) {
  const [draft, setDraft] = useState('');
  const [isSet, setIsSet] = useState(() => Boolean(readToken()));
  const use = (event) => {
    event.preventDefault();
    saveToken(draft.trim());
    setIsSet(Boolean(draft.trim()));
    setDraft('');
    onChange();
  };
  const forget = () => {
    saveToken('');
    setIsSet(false);
    onChange();
  };
  return (
    <form className="token" onSubmit={use} title={t('tokenHint')}>
      <label>{t('token')}{' '}
        <input type="password" autoComplete="off" spellCheck="false" value={draft}
          placeholder={isSet ? `•••• ${t('tokenIsSet')}` : ''} onChange={(e) => setDraft(e.target.value)} />
      </label>
      <button type="submit" disabled={!draft.trim()}>{t('tokenUse')}</button>
      {isSet && <button type="button" onClick={forget}>{t('tokenForget')}</button>}
    </form>
  );
}
