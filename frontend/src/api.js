// The service's HTTP API (docs: API.md of the project). Every call goes to the server that served the page.
//
// The bearer token (when the service is started with auth_token_var) lives in sessionStorage only: it is
// gone when the tab closes, never written to localStorage, never put in a URL or logged; every call sends
// it as `Authorization: Bearer <token>`.

const TOKEN_KEY = 'dashrag-token';

export function readToken() {
  return window.sessionStorage.getItem(TOKEN_KEY) || '';
}

export function saveToken(token) {
  if (token) window.sessionStorage.setItem(TOKEN_KEY, token);
  else window.sessionStorage.removeItem(TOKEN_KEY);
}

// A failed call: `status` (0 when the server could not be reached), the server's own `detail` as text
// (a 422's list of issues written as "where: message" lines), and `step`, the pipeline step a 503's
// detail starts with ("build: …" -> "build"). The page words the failure from status and step in its
// language and shows `detail` verbatim beside it (see describeFailure in i18n.js).
export class ApiError extends Error {
  constructor(status, detail, body) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.body = body;
    const step = /^([a-z_]+): /.exec(detail || '');
    this.step = status === 503 && step ? step[1] : null;
  }
}

function issueText(issue) {
  if (typeof issue.message === 'string' && typeof issue.path === 'string') { // a tree problem at its JSON path
    return issue.path ? `${issue.path}: ${issue.message}` : issue.message;
  }
  const where = Array.isArray(issue.loc) ? issue.loc.filter((part) => part !== 'body').join('.') : '';
  return where ? `${where}: ${issue.msg}` : String(issue.msg);
}

function detailText(body, response) {
  const detail = body && body.detail !== undefined ? body.detail : response.statusText;
  if (Array.isArray(detail)) return detail.map((issue) => (issue && typeof issue === 'object' ? issueText(issue) : String(issue))).join('\n');
  return typeof detail === 'string' ? detail : JSON.stringify(detail);
}

async function answer(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { detail: text };
  }
  if (!response.ok) throw new ApiError(response.status, detailText(body, response), body);
  return body;
}

function call(path, init = {}) {
  const token = readToken();
  const headers = { ...(init.headers || {}), ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  return fetch(path, { ...init, headers }).then(answer, (error) => {
    throw new ApiError(0, error.message, null);
  });
}

export const api = {
  get: (path) => call(path),
  post: (path, body) => call(path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  }),
  postForm: (path, form) => call(path, { method: 'POST', body: form }),
  del: (path) => call(path, { method: 'DELETE' }),
};
