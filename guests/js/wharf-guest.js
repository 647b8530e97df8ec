// Helpers for JavaScript agents on Wharf: read the request head and build
// response header lists (MessagePack) without a MessagePack library.
//
// Written for an interpreter: no per-field arrays or closures, ASCII without
// TextDecoder/TextEncoder calls (each costs microseconds in the guest).

const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

function malformed() {
  return new Error('malformed MessagePack');
}

// A cursor over MessagePack bytes.
class Reader {
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }

  byte() {
    if (this.pos >= this.buf.length) throw malformed();
    return this.buf[this.pos++];
  }

  be(n) {
    if (this.pos + n > this.buf.length) throw malformed();
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 256 + this.buf[this.pos++];
    return v;
  }

  // A map (family 0x80) or array (family 0x90) length.
  len(family) {
    const tag = this.byte();
    const wide = family === 0x80 ? 0xde : 0xdc;
    if ((tag & 0xf0) === family) return tag & 0x0f;
    if (tag === wide) return this.be(2);
    if (tag === wide + 1) return this.be(4);
    throw malformed();
  }

  str() {
    const tag = this.byte();
    let n;
    if ((tag & 0xe0) === 0xa0) n = tag & 0x1f;
    else if (tag >= 0xd9 && tag <= 0xdb) n = this.be(1 << (tag - 0xd9));
    else if (tag >= 0xc4 && tag <= 0xc6) n = this.be(1 << (tag - 0xc4)); // bin, as header values are
    else throw malformed();
    const start = this.pos;
    const end = start + n;
    if (end > this.buf.length) throw malformed();
    this.pos = end;
    let text = '';
    for (let i = start; i < end; i++) {
      const c = this.buf[i];
      if (c >= 0x80) return utf8.decode(this.buf.subarray(start, end));
      text += String.fromCharCode(c);
    }
    return text;
  }
}

// The request head as an object: method, path, query, id, client, affinity.
// Throws when it is malformed.
// The value of header `name` (lower-case) in a header list, as a string;
// undefined when it is not there.
export function header(list, name) {
  if (!list || list.length === 0) return undefined;
  const r = new Reader(list);
  const pairs = r.len(0x90);
  for (let i = 0; i < pairs; i++) {
    if (r.len(0x90) !== 2) throw malformed();
    const key = r.str();
    const value = r.str();
    if (key === name) return value;
  }
  return undefined;
}

export function decodeHead(head) {
  const r = new Reader(head);
  const fields = r.len(0x80);
  const out = {};
  for (let i = 0; i < fields; i++) {
    const key = r.str();
    out[key] = r.str();
  }
  return out;
}

// A string's UTF-8 bytes; ASCII without a TextEncoder call.
function utf8Bytes(text) {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return encoder.encode(text);
    out[i] = c;
  }
  return out;
}

// Bytes of a MessagePack length prefix (array or str) for `n`.
function prefixSize(n, small) {
  if (n < small) return 1;
  if (small === 32 && n < 0x100) return 2;
  return n < 0x10000 ? 3 : 5;
}

function writePrefix(out, at, n, small, fix, tag8, tag16) {
  if (n < small) {
    out[at] = fix | n;
    return at + 1;
  }
  if (tag8 !== 0 && n < 0x100) {
    out[at] = tag8;
    out[at + 1] = n;
    return at + 2;
  }
  if (n < 0x10000) {
    out[at] = tag16;
    out[at + 1] = n >> 8;
    out[at + 2] = n & 0xff;
    return at + 3;
  }
  out[at] = tag16 + 1;
  out[at + 1] = (n >>> 24) & 0xff;
  out[at + 2] = (n >> 16) & 0xff;
  out[at + 3] = (n >> 8) & 0xff;
  out[at + 4] = n & 0xff;
  return at + 5;
}

// A response header list: the pairs of `requestHeaders` (possibly empty)
// followed by `extra` [name, value] string pairs.
export function headers(requestHeaders, ...extra) {
  let pairs = 0;
  let rest = 0;
  if (requestHeaders.length > 0) {
    const r = new Reader(requestHeaders);
    pairs = r.len(0x90);
    rest = r.pos;
  }
  const strings = [];
  let size = prefixSize(pairs + extra.length, 16) + requestHeaders.length - rest;
  for (let i = 0; i < extra.length; i++) {
    const name = utf8Bytes(extra[i][0]);
    const value = utf8Bytes(extra[i][1]);
    strings.push(name, value);
    size += 1 + prefixSize(name.length, 32) + name.length + prefixSize(value.length, 32) + value.length;
  }
  const out = new Uint8Array(size);
  let at = writePrefix(out, 0, pairs + extra.length, 16, 0x90, 0, 0xdc);
  out.set(requestHeaders.subarray(rest), at);
  at += requestHeaders.length - rest;
  for (let i = 0; i < strings.length; i += 2) {
    out[at++] = 0x92;
    for (const bytes of [strings[i], strings[i + 1]]) {
      at = writePrefix(out, at, bytes.length, 32, 0xa0, 0xd9, 0xda);
      out.set(bytes, at);
      at += bytes.length;
    }
  }
  return out;
}

// A2A (the `a2a-agent` world): messages, artifacts and outcomes as the
// bindings take them. Report progress with `working` and `addArtifact`
// from 'wharf:plugin/a2a@0.2.0'.

// The text of a message's text parts, joined by newlines.
export function a2aText(message) {
  return message.parts
    .filter((p) => p.content.tag === 'text')
    .map((p) => p.content.val)
    .join('\n');
}

// A text part.
export function a2aPart(text) {
  return { content: { tag: 'text', val: text }, mediaType: '', filename: '' };
}

// An agent message holding `text` (the host gives it an id).
export function a2aMessage(text) {
  return { messageId: '', role: 'agent', parts: [a2aPart(text)] };
}

// An artifact (or a chunk of one) holding `text`.
export function a2aArtifact(artifactId, text, name = '') {
  return { artifactId, name, parts: [a2aPart(text)] };
}

// A direct reply: `text` answers the client as a message and no task is
// kept (on a new task's first turn that reported nothing; else the task
// completes with it).
export function a2aReply(text) {
  return a2aOutcome('direct-reply', text);
}

// How a turn ends: `state` is 'completed', 'input-required',
// 'auth-required', 'failed', 'rejected' or 'direct-reply'; `text` the
// status message.
export function a2aOutcome(state, text) {
  return { state, message: text === undefined ? undefined : a2aMessage(text) };
}
