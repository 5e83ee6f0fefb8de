// Paths into a config tree. A path is an array of keys (['params', 'children', 1]); its text form is the
// server's: "params.children[1].params.top_k" (the CLI and POST /trees/validate use the same form).

export function pathText(path) {
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else text += text ? `.${key}` : key;
  }
  return text;
}

export function joinText(base, key) {
  return pathText([...parsePath(base), key]);
}

export function parsePath(text) {
  const path = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  let m;
  while ((m = re.exec(text || '')) !== null) path.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return path;
}

export function pointerToPath(pointer) {
  // JSON pointer (ajv's instancePath) -> path array; array indices become numbers.
  if (!pointer) return [];
  return pointer.split('/').slice(1).map((part) => {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    return /^\d+$/.test(key) ? Number(key) : key;
  });
}

export function getIn(value, path) {
  return path.reduce((v, key) => (v == null ? undefined : v[key]), value);
}

export function setIn(value, path, next) {
  if (path.length === 0) return next;
  const [key, ...rest] = path;
  const copy = Array.isArray(value) ? [...value] : { ...value };
  copy[key] = setIn(value == null ? undefined : value[key], rest, next);
  return copy;
}

// Whether `where` is at `path` or under it: a node's path and an error's ("params.children[1]" holds
// "params.children[1].params.top_k", not "params.children[10]").
export function isWithin(path, where) {
  return !path || where === path || where.startsWith(`${path}.`) || where.startsWith(`${path}[`);
}
