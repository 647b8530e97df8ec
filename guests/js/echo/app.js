// echo (JavaScript): answers 200 with the request body and headers, plus
// x-echo-method and x-echo-path taken from the request head.
import { decodeHead, headers } from '../wharf-guest.js';

export function handle(req) {
  let head, out;
  try {
    head = decodeHead(req.head);
    out = headers(req.headers, ['x-echo-method', head.method ?? ''], ['x-echo-path', head.path ?? '']);
  } catch (err) {
    throw { tag: 'bad-request', val: `malformed request: ${err.message}` };
  }
  return { status: 200, headers: out, body: req.body };
}

export function describe() {
  return {
    name: 'echo',
    version: '0.1.0',
    description: 'Returns the request body and headers (JavaScript)',
    skills: [],
  };
}

export function health() {
  return { tag: 'ok' };
}
