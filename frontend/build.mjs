// Bundles the page into ../dashrag/web/static/: index.html, app.js, app.css and build-info.json.
// build-info.json records the sha256 of the sources (see sourceHash): a Python test recomputes it and
// fails when the committed bundle was built from other sources.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dashrag', 'web', 'static');

function files(folder) {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

// sha256 over the sources in path order: for each file, its path relative to frontend/, a NUL, its bytes, a NUL.
export function sourceHash() {
  const paths = [...files(join(here, 'src')), ...['index.html', 'build.mjs', 'package.json', 'package-lock.json'].map((f) => join(here, f))];
  const rels = paths.map((p) => relative(here, p).split(sep).join('/')).sort();
  const hash = createHash('sha256');
  for (const rel of rels) {
    hash.update(rel);
    hash.update('\0');
    hash.update(readFileSync(join(here, rel)));
    hash.update('\0');
  }
  return { sha256: hash.digest('hex'), files: rels };
}

mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: { app: join(here, 'src', 'main.jsx') },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  jsx: 'automatic',
  loader: { '.js': 'jsx' },
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'linked',
  outdir: out,
  logLevel: 'warning',
});
copyFileSync(join(here, 'index.html'), join(out, 'index.html'));
const { sha256, files: sources } = sourceHash();
const info = { sources_sha256: sha256, sources, esbuild: esbuild.version };
writeFileSync(join(out, 'build-info.json'), `${JSON.stringify(info, null, 2)}\n`);
console.log(`built ${out} from ${sources.length} sources (sha256 ${sha256.slice(0, 12)})`);
