// Helpers for JavaScript agents on Wharf: read the request head and build
// response header lists (MessagePack) without a MessagePack library.

const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

function malformed() {
  return new Error('malformed MessagePack');
}

function readBE(buf, pos, n) {
  if (pos + n > buf.length) throw malformed();
  let v = 0;
  for (let i = 0; i < n; i++) v = v * 256 + buf[pos + i];
  return v;
}

// Reads a map (family 0x80) or array (family 0x90) length: [length, next].
function readLen(buf, pos, family) {
  if (pos >= buf.length) throw malformed();
  const tag = buf[pos];
  const wide = family === 0x80 ? 0xde : 0xdc;
  if ((tag & 0xf0) === family) return [tag & 0x0f, pos + 1];
  if (tag === wide) return [readBE(buf, pos + 1, 2), pos + 3];
  if (tag === wide + 1) return [readBE(buf, pos + 1, 4), pos + 5];
  throw malformed();
}

function readStr(buf, pos) {
  if (pos >= buf.length) throw malformed();
  const tag = buf[pos];
  let n;
  if ((tag & 0xe0) === 0xa0) {
    n = tag & 0x1f;
    pos += 1;
  } else if (tag >= 0xd9 && tag <= 0xdb) {
    const width = 1 << (tag - 0xd9);
    n = readBE(buf, pos + 1, width);
    pos += 1 + width;
  } else {
    throw malformed();
  }
  if (pos + n > buf.length) throw malformed();
  return [utf8.decode(buf.subarray(pos, pos + n)), pos + n];
}

// The request head as an object: method, path, query, id, client, affinity.
// Throws when it is malformed.
export function decodeHead(head) {
  let [fields, pos] = readLen(head, 0, 0x80);
  const out = {};
  for (let i = 0; i < fields; i++) {
    let key, value;
    [key, pos] = readStr(head, pos);
    [value, pos] = readStr(head, pos);
    out[key] = value;
  }
  return out;
}

function lenPrefix(n, small, tag8, tag16, tag32) {
  if (n < small) return [tag8 | n];
  if (tag16 === 0xda && n < 0x100) return [0xd9, n];
  if (n < 0x10000) return [tag16, n >> 8, n & 0xff];
  return [tag32, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
}

// A response header list: the pairs of `requestHeaders` (possibly empty)
// followed by `extra` [name, value] string pairs.
export function headers(requestHeaders, ...extra) {
  let pairs = 0;
  let pos = 0;
  if (requestHeaders.length > 0) [pairs, pos] = readLen(requestHeaders, 0, 0x90);
  const parts = [Uint8Array.from(lenPrefix(pairs + extra.length, 16, 0x90, 0xdc, 0xdd))];
  parts.push(requestHeaders.subarray(pos));
  for (const [name, value] of extra) {
    parts.push(Uint8Array.of(0x92));
    for (const text of [name, value]) {
      const bytes = encoder.encode(text);
      parts.push(Uint8Array.from(lenPrefix(bytes.length, 32, 0xa0, 0xda, 0xdb)), bytes);
    }
  }
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
