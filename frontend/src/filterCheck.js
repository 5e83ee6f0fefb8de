// The query tab's metadata filter, checked as the user types against the published filter schema (GET
// /schemas/filter, docs/filters.md) with ajv, as the forms are checked against the component schemas; the
// messages in the page's language (ajv-i18n), each at the filter's JSON path in the server's form ($.year.$gte).
// What the schema cannot know (a comparison of kinds the corpus does not hold) is the server's 422, shown at the
// same box.
import Ajv2020 from 'ajv/dist/2020';
import localizeEs from 'ajv-i18n/localize/es';
import { pointerToPath } from './paths';

const PLAIN = /^\$?[A-Za-z_][A-Za-z0-9_-]*$/;

export function filterPath(pointer) {
  return pointerToPath(pointer).reduce((text, key) => {
    if (typeof key === 'number') return `${text}[${key}]`;
    return PLAIN.test(key) ? `${text}.${key}` : `${text}[${JSON.stringify(key)}]`;
  }, '$');
}

// ajv reports every failed branch of a oneOf; at a path where one error says what is wrong (an unknown
// operator, a list too short), the branches' "must be string" / "must be number" are only noise.
function plainErrors(errors) {
  const kept = errors.filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'if');
  const specific = new Set(kept.filter((e) => e.keyword !== 'type').map((e) => e.instancePath));
  const byPath = new Map();
  for (const e of kept) {
    if (e.keyword === 'type' && specific.has(e.instancePath)) continue;
    const extra = e.keyword === 'additionalProperties' ? `: ${e.params.additionalProperty}` : '';
    const path = filterPath(e.instancePath);
    const messages = byPath.get(path) || [];
    const message = `${e.message}${extra}`;
    if (!messages.includes(message)) messages.push(message);
    byPath.set(path, messages);
  }
  return [...byPath].map(([path, messages]) => ({ path, message: messages.join('; ') }));
}

export function makeFilterCheck(schema) {
  const ajv = new Ajv2020({ allErrors: true, strict: false, messages: true });
  const validate = ajv.compile(schema);
  // -> { filters: the object to send (null: none), errors: [{path, message}], notJson: the parser's words }
  return (text, lang) => {
    if (!text.trim()) return { filters: null, errors: [], notJson: null };
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { filters: null, errors: [], notJson: error.message };
    }
    if (validate(value)) return { filters: value, errors: [], notJson: null };
    const errors = [...validate.errors];
    if (lang === 'es') localizeEs(errors);
    return { filters: null, errors: plainErrors(errors), notJson: null };
  };
}
