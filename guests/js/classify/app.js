// classify (JavaScript): a keyword classifier. The body is UTF-8 text; words
// are runs of ASCII letters and digits, lower-cased. The answer is JSON:
// {"words":W,"labels":[{"label":L,"hits":H,"score":S},...]}, labels with
// hits only, most hits first (ties in table order), S = floor(H*1000/total).
import { headers } from '../wharf-guest.js';

const LABELS = [
  ['billing', ['invoice', 'refund', 'charge', 'payment', 'price']],
  ['outage', ['down', 'error', 'outage', 'timeout', 'crash']],
  ['security', ['password', 'breach', 'phishing', 'leak', 'hacked']],
];
const LABEL_OF = new Map(LABELS.flatMap(([, words], i) => words.map((w) => [w, i])));
const JSON_HEADERS = headers(new Uint8Array(0), ['content-type', 'application/json']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function handle(req) {
  let text;
  try {
    text = utf8.decode(req.body);
  } catch {
    throw { tag: 'bad-request', val: 'body is not UTF-8' };
  }
  const hits = LABELS.map(() => 0);
  let words = 0;
  for (const [word] of text.matchAll(/[A-Za-z0-9]+/g)) {
    words += 1;
    const label = LABEL_OF.get(word.toLowerCase());
    if (label !== undefined) hits[label] += 1;
  }
  const total = hits.reduce((a, b) => a + b, 0);
  const labels = LABELS.map(([name], i) => i)
    .filter((i) => hits[i] > 0)
    .sort((a, b) => hits[b] - hits[a] || a - b)
    .map((i) => ({ label: LABELS[i][0], hits: hits[i], score: Math.floor((hits[i] * 1000) / total) }));
  const body = new TextEncoder().encode(JSON.stringify({ words, labels }));
  return { status: 200, headers: JSON_HEADERS, body };
}

export function describe() {
  return {
    name: 'classify',
    version: '0.1.0',
    description: 'Labels text by keywords, with scores (JavaScript)',
    skills: [],
  };
}

export function health() {
  return { tag: 'ok' };
}
