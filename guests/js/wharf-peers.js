// Other agents and topics, through the host (the `peers` import), for
// JavaScript agents on Wharf. The caller's KDL block must allow it:
// `calls "NAME"` for calls, `publishes "PATTERN"` to publish. A module of
// its own: filters, which do not import `peers`, share wharf-guest.js.
import { call as hostCall, publish as hostPublish } from 'wharf:plugin/peers@0.2.0';

const encoder = new TextEncoder();

// A MessagePack str of `text` (under 256 bytes once encoded).
function str(text) {
  const bytes = encoder.encode(text);
  const head = bytes.length < 32 ? [0xa0 | bytes.length] : [0xd9, bytes.length];
  return [...head, ...bytes];
}

const CASES = { denied: 403, 'not-found': 404, 'loop-detected': 508 };

// Calls `agent` with a request of this method, path and body (no headers)
// and returns { status, body }: the callee's answer, or for a refused or
// failed call 403 (denied), 404 (not found), 508 (a loop) or the failure's
// own status, with `CASE: message` as body.
export function call(agent, method, path, body) {
  const head = Uint8Array.from([0x83, ...str('method'), ...str(method), ...str('path'), ...str(path), ...str('query'), ...str('')]);
  try {
    const resp = hostCall(agent, { head, headers: new Uint8Array(0), body });
    return { status: resp.status, body: resp.body };
  } catch (err) {
    const e = err.payload ?? err;
    if (e.tag === 'failed') {
      return { status: e.val[0], body: encoder.encode(`failed: ${e.val[1]}`) };
    }
    const name = e.tag === 'loop-detected' ? 'loop' : e.tag;
    return { status: CASES[e.tag] ?? 500, body: encoder.encode(`${name}: ${e.val}`) };
  }
}

// Publishes `payload` to `topic`: how many subscribers it was queued for;
// throws with the host's reason when refused.
export function publish(topic, payload) {
  return hostPublish(topic, payload);
}
