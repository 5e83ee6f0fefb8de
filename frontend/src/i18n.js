// The page's own strings in English and Spanish (strings.json: `strings` by language, `categories` the
// picker's group names); tests/web/test_strings.py fails when a key or placeholder is in one language only.
// The words of each component and parameter come from frontend_meta (display, params, rule_messages).
import { replaceStringParameters } from '@rjsf/utils';
import TEXTS from './strings.json';

const STRINGS = TEXTS.strings;
export const CATEGORY_NAMES = TEXTS.categories;
export const LANGUAGES = ['en', 'es'];

export function translator(lang) {
  const table = STRINGS[lang] || STRINGS.en;
  return (key, values = {}) => {
    const text = table[key] ?? STRINGS.en[key] ?? key;
    return text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  };
}

// rjsf's own words (the buttons of a list field, "Item", ...) in `lang`: strings.json's `rjsf_es` maps
// each of rjsf's English strings (its TranslatableString values) to Spanish.
export function rjsfTranslator(lang) {
  const table = lang === 'es' ? TEXTS.rjsf_es : {};
  return (text, params) => replaceStringParameters(table[text] ?? text, params);
}

export function categoryName(lang, category) {
  return (CATEGORY_NAMES[lang] || CATEGORY_NAMES.en)[category] || category;
}

// A failed API call in the page's language: the summary is chosen by the HTTP status (and, for a 503,
// by the pipeline step its detail starts with), so it needs no translation of the server's English; the
// server's own detail is shown beside it verbatim (React escapes it), for what only the server knows.
export function describeFailure(error, t) {
  const status = error && typeof error.status === 'number' ? error.status : null;
  if (status === null) return { summary: t('failed', { error: String(error?.message ?? error) }), detail: null };
  let summary;
  if (status === 503 && error.step && t(`step_${error.step}`) !== `step_${error.step}`) {
    summary = t('error503step', { step: t(`step_${error.step}`) });
  } else if ([0, 401, 404, 405, 409, 413, 422, 500, 503].includes(status)) {
    summary = t(`error${status}`);
  } else {
    summary = t('errorOther', { status });
  }
  return { summary, detail: error.detail || null };
}
