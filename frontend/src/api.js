// The service's HTTP API (docs: API.md of the project). Every call goes to the server that served the page.

async function answer(response) {
  const text = await response.text();
  const body = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const detail = body && body.detail !== undefined ? body.detail : response.statusText;
    const error = new Error(typeof detail === 'string' ? detail : JSON.stringify(detail));
    error.status = response.status;
    error.body = body;
    throw error;
  }
  return body;
}

export const api = {
  get: (path) => fetch(path).then(answer),
  post: (path, body) => fetch(path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  }).then(answer),
  postForm: (path, form) => fetch(path, { method: 'POST', body: form }).then(answer),
  del: (path) => fetch(path, { method: 'DELETE' }).then(answer),
};
