// Spanish titles of the parameters (the schemas carry English titles and help only). Keyed by parameter
// name, which means the same thing in every component; a name missing here shows its English title.
export const FIELD_TITLES_ES = {
  top_k: 'Cuántos devolver', similarity_metric: 'Métrica de similitud', embedding: 'Modelo de incrustación',
  chunk_size: 'Tamaño del fragmento', chunk_overlap: 'Solapamiento', batch_size: 'Tamaño de lote',
  device: 'Dispositivo', normalize: 'Normalizar', max_seq_length: 'Longitud máxima de secuencia',
  overflow_strategy: 'Estrategia de desbordamiento', local_dir: 'Carpeta local', children: 'Hijos',
  merge_strategy: 'Estrategia de fusión', weights: 'Pesos', rrf_k: 'k de RRF', concurrent: 'En paralelo',
  separators: 'Separadores', system: 'Mensaje de sistema', template: 'Plantilla', sublinear_tf: 'TF sublineal',
  smooth_idf: 'IDF suavizado', vectorizer: 'Vectorizador', model: 'Modelo', variant: 'Variante', k1: 'k1', b: 'b',
  delta: 'Delta', epsilon: 'Épsilon', similarity_function: 'Función de similitud', api_base: 'URL base de la API',
  temperature: 'Temperatura', timeout: 'Tiempo límite', max_tokens: 'Máximo de tokens', credential: 'Credencial',
  api_key_required: 'Clave de API obligatoria', truncate: 'Truncar', max_workers: 'Máximo de hilos',
  timeout_s: 'Tiempo límite (s)', fetch_k: 'Candidatos a pedir', analyzer: 'Analizador', lowercase: 'Minúsculas',
  ngram_min: 'n-grama mínimo', ngram_max: 'n-grama máximo', stop_words: 'Palabras vacías',
  strip_accents: 'Quitar acentos', min_df: 'Frecuencia documental mínima', max_df: 'Frecuencia documental máxima',
  max_features: 'Máximo de términos', stemmer: 'Lematizador (stemmer)', lambda_mult: 'Lambda de MMR',
  max_length: 'Longitud máxima', fast: 'Etapa rápida', precise: 'Etapa precisa',
  stage1_top_n: 'Candidatos de la etapa rápida', early_exit: 'Salida anticipada', exit_margin: 'Margen de salida',
  exit_threshold: 'Umbral de salida', mmr_lambda: 'Lambda de MMR', mmr_embedding: 'Incrustación para MMR',
  semantic_top_k: 'Cuántos semánticos', max_words_for_hybrid: 'Máximo de palabras para híbrido',
  min_semantic_score: 'Puntuación semántica mínima', semantic_score: 'Puntuación semántica', text_k1: 'k1 del texto',
  text_b: 'b del texto', min_document_score: 'Puntuación mínima del documento',
  max_fragments_per_document: 'Máximo de fragmentos por documento', top_m: 'Top M',
  rerank_round_size: 'Tamaño de ronda de reordenación', rerank_max_chars: 'Máximo de caracteres a reordenar',
  min_score: 'Puntuación mínima', fallback_top_n: 'Fragmentos de reserva', min_documents: 'Mínimo de documentos',
  max_fragments: 'Máximo de fragmentos', fill_up_target_documents: 'Documentos objetivo del relleno',
  fill_up_max_chars: 'Máximo de caracteres del relleno', automatically_rerank: 'Reordenar automáticamente',
  reranker: 'Reordenador', return_documents: 'Devolver documentos', trace_fragments: 'Fragmentos en la traza',
  enable_retrieve_then_expand: 'Recuperar y ampliar', expand_window: 'Ventana de ampliación',
  function_call_max_trials: 'Intentos de llamada a función', fallback_to_child_order: 'Usar el orden del hijo si falla',
  window_size: 'Tamaño de ventana', window_stride: 'Paso de la ventana', prompt: 'Instrucciones',
  llm_model: 'Modelo de lenguaje', threads: 'Hilos', var: 'Variable de entorno',
};

export function fieldTitle(lang, field, prop) {
  const english = prop.title || field.split('_').map((w, i) => (i === 0 ? w[0].toUpperCase() + w.slice(1) : w)).join(' ');
  const spanish = FIELD_TITLES_ES[field];
  if (lang !== 'es' || !spanish) return english;
  return spanish === field ? field : `${spanish} (${field})`;
}
