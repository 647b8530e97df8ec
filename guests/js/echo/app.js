// echo (JavaScript): answers 200 with the request body and headers, plus
// x-echo-method and x-echo-path taken from the request head. With
// x-echo-chunks: N (1-64) it streams the answer: the head at once, the body
// in N pieces, the last one returned by handle. With x-echo-call: AGENT it
// calls AGENT through the host with the body and answers with its status and
// body (a refused or failed call: its status and `CASE: message`); with
// x-echo-publish: TOPIC it publishes the body and adds x-echo-queued.
import { start, write } from 'wharf:plugin/streaming@0.2.0';
import { decodeHead, header, headers } from '../wharf-guest.js';
import { call, publish } from '../wharf-peers.js';

export function handle(req) {
  let head, out;
  try {
    head = decodeHead(req.head);
    const agent = header(req.headers, 'x-echo-call');
    if (agent !== undefined) {
      const answer = call(agent, 'POST', '/', req.body);
      return { status: answer.status, headers: new Uint8Array(0), body: answer.body };
    }
    const extra = [['x-echo-method', head.method ?? ''], ['x-echo-path', head.path ?? '']];
    const topic = header(req.headers, 'x-echo-publish');
    if (topic !== undefined) {
      let queued;
      try {
        queued = String(publish(topic, req.body));
      } catch {
        queued = 'refused';
      }
      extra.push(['x-echo-queued', queued]);
    }
    out = headers(req.headers, ...extra);
  } catch (err) {
    throw { tag: 'bad-request', val: `malformed request: ${err.message}` };
  }
  const chunks = header(req.headers, 'x-echo-chunks');
  if (chunks === undefined) return { status: 200, headers: out, body: req.body };
  const n = Number(chunks);
  if (!Number.isInteger(n) || n < 1 || n > 64) {
    throw { tag: 'bad-request', val: 'malformed request: x-echo-chunks must be 1 to 64' };
  }
  start(200, out);
  let body = req.body;
  const size = Math.max(Math.ceil(body.length / n), 1);
  while (body.length > size) {
    write(body.subarray(0, size));
    body = body.subarray(size);
  }
  return { status: 200, headers: new Uint8Array(0), body };
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
