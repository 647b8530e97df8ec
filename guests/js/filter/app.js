// filter (JavaScript): refuses paths below /admin with a JSON 403 naming the
// rule, attaches the request method as metadata, and marks every response
// with x-filtered-by: js.
import { decodeHead, headers } from '../wharf-guest.js';

const encoder = (text) => Uint8Array.from(text, (c) => c.charCodeAt(0));

function verdict({ decision = { tag: 'allow' }, responseOps = [], metadata = [], ruleIds = [], reason = '' } = {}) {
  return {
    decision,
    requestHeaderOps: [],
    responseHeaderOps: responseOps,
    body: undefined,
    metadata,
    wantBody: false,
    audit: { ruleIds, tags: [], reason },
  };
}

export function phases() {
  return { requestHeaders: true, requestBody: false, responseHeaders: true, responseBody: false };
}

export function onRequestHeaders(head, _headers) {
  const fields = decodeHead(head);
  if ((fields.path ?? '').startsWith('/admin')) {
    const block = {
      status: 403,
      headers: headers(new Uint8Array(), ['content-type', 'application/json']),
      body: encoder('{"error":{"code":"forbidden","message":"admin paths are closed"}}'),
    };
    return verdict({ decision: { tag: 'block', val: block }, ruleIds: ['admin-path'], reason: 'admin path' });
  }
  return verdict({ metadata: [['js.method', fields.method ?? '']] });
}

export function onRequestBody(_head, _headers, _body) {
  return verdict();
}

export function onResponseHeaders(_head, _headers, _status, _respHeaders) {
  return verdict({ responseOps: [{ tag: 'set', val: ['x-filtered-by', encoder('js')] }] });
}

export function onResponseBody(_head, _headers, _status, _respHeaders, _body) {
  return verdict();
}
