// wharf_guest.h: small helpers for C agents and filters on Wharf, used with
// the bindings that `wharf bindgen --lang c` generates (agent.h; filter.h
// with `--world filter`: define WHARF_FILTER before including this;
// a2a_agent.h with `--world a2a-agent`: define WHARF_A2A). Header-only.
//
// The request `head` is a MessagePack map of strings; request and response
// headers are a MessagePack array of [name, value] pairs. These helpers read
// the one and extend the other without a MessagePack library.
#ifndef WHARF_GUEST_H
#define WHARF_GUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef WHARF_FILTER
#include "filter.h"
typedef filter_list_u8_t wg_list;
#elif defined(WHARF_A2A)
// The `a2a-agent` world (`--world a2a-agent`): its bindings prefix the
// agent's types with `a2a_agent_`; the helpers below use the agent world's
// names for them.
#include "a2a_agent.h"
#define agent_list_u8_t a2a_agent_list_u8_t
#define agent_string_t a2a_agent_string_t
#define agent_error_t a2a_agent_error_t
#define agent_string_dup a2a_agent_string_dup
#define agent_string_free a2a_agent_string_free
#define agent_string_set a2a_agent_string_set
typedef a2a_agent_list_u8_t wg_list;
#else
#include "agent.h"
typedef agent_list_u8_t wg_list;
#endif

// A borrowed byte string.
typedef struct {
  const uint8_t *ptr;
  size_t len;
} wg_str;

// A growable buffer whose memory is handed to a response (the bindings free
// it with free() after the call).
typedef struct {
  uint8_t *ptr;
  size_t len;
  size_t cap;
} wg_buf;

static void wg_put(wg_buf *b, const void *data, size_t len) {
  if (b->len + len > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->len + len) cap *= 2;
    b->ptr = realloc(b->ptr, cap);
    if (!b->ptr) abort();
    b->cap = cap;
  }
  if (len) memcpy(b->ptr + b->len, data, len);
  b->len += len;
}

static void wg_put_byte(wg_buf *b, uint8_t byte) { wg_put(b, &byte, 1); }

static void wg_put_be(wg_buf *b, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; i--) wg_put_byte(b, (uint8_t)(v >> (8 * i)));
}

static void wg_put_cstr(wg_buf *b, const char *s) { wg_put(b, s, strlen(s)); }

// Writes a MessagePack str.
static void wg_put_msgpack_str(wg_buf *b, const uint8_t *s, size_t len) {
  if (len < 32) {
    wg_put_byte(b, 0xa0 | (uint8_t)len);
  } else if (len < 0x100) {
    wg_put_byte(b, 0xd9);
    wg_put_be(b, len, 1);
  } else if (len < 0x10000) {
    wg_put_byte(b, 0xda);
    wg_put_be(b, len, 2);
  } else {
    wg_put_byte(b, 0xdb);
    wg_put_be(b, len, 4);
  }
  wg_put(b, s, len);
}

static bool wg_read_be(const uint8_t **p, const uint8_t *end, int bytes, uint64_t *out) {
  if (end - *p < bytes) return false;
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v = (v << 8) | (*p)[i];
  *p += bytes;
  *out = v;
  return true;
}

// Reads a MessagePack map (family 0x80) or array (family 0x90) length.
static bool wg_read_len(const uint8_t **p, const uint8_t *end, uint8_t family, uint64_t *out) {
  if (*p >= end) return false;
  uint8_t tag = *(*p)++;
  uint8_t wide16 = family == 0x80 ? 0xde : 0xdc;
  if ((tag & 0xf0) == family) {
    *out = tag & 0x0f;
    return true;
  }
  if (tag == wide16) return wg_read_be(p, end, 2, out);
  if (tag == wide16 + 1) return wg_read_be(p, end, 4, out);
  return false;
}

static bool wg_read_str(const uint8_t **p, const uint8_t *end, wg_str *out) {
  if (*p >= end) return false;
  uint8_t tag = *(*p)++;
  uint64_t len;
  if ((tag & 0xe0) == 0xa0) {
    len = tag & 0x1f;
  } else if (tag >= 0xd9 && tag <= 0xdb) {
    if (!wg_read_be(p, end, 1 << (tag - 0xd9), &len)) return false;
  } else {
    return false;
  }
  if ((uint64_t)(end - *p) < len) return false;
  out->ptr = *p;
  out->len = (size_t)len;
  *p += len;
  return true;
}

// Looks `key` up in the request head ("method", "path", "query", "id",
// "client", "affinity"). False when absent or malformed.
static bool wg_head_get(const wg_list *head, const char *key, wg_str *out) {
  const uint8_t *p = head->ptr, *end = head->ptr + head->len;
  uint64_t fields;
  if (!wg_read_len(&p, end, 0x80, &fields)) return false;
  size_t key_len = strlen(key);
  for (uint64_t i = 0; i < fields; i++) {
    wg_str k, v;
    if (!wg_read_str(&p, end, &k) || !wg_read_str(&p, end, &v)) return false;
    if (k.len == key_len && memcmp(k.ptr, key, key_len) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

// Starts a header list holding the pairs of `headers` (request encoding)
// plus room for `extra` pairs the caller appends with wg_put_header.
static bool wg_headers_extend(const wg_list *headers, uint64_t extra, wg_buf *out) {
  const uint8_t *p = headers->ptr, *end = headers->ptr + headers->len;
  uint64_t pairs = 0;
  if (headers->len && !wg_read_len(&p, end, 0x90, &pairs)) return false;
  uint64_t n = pairs + extra;
  if (n < 16) {
    wg_put_byte(out, 0x90 | (uint8_t)n);
  } else if (n < 0x10000) {
    wg_put_byte(out, 0xdc);
    wg_put_be(out, n, 2);
  } else {
    wg_put_byte(out, 0xdd);
    wg_put_be(out, n, 4);
  }
  wg_put(out, p, (size_t)(end - p));
  return true;
}

// Appends one [name, value] header pair.
static void wg_put_header(wg_buf *out, const char *name, const uint8_t *value, size_t len) {
  wg_put_byte(out, 0x92);
  wg_put_msgpack_str(out, (const uint8_t *)name, strlen(name));
  wg_put_msgpack_str(out, value, len);
}

// Moves a buffer into a list the bindings will free.
static wg_list wg_into_list(wg_buf *b) {
  wg_list list = {b->ptr, b->len};
  b->ptr = NULL;
  b->len = b->cap = 0;
  return list;
}

// Looks header `name` (lower-case) up in a header list. False when absent
// or malformed.
static bool wg_header_get(const wg_list *headers, const char *name, wg_str *out) {
  const uint8_t *p = headers->ptr, *end = headers->ptr + headers->len;
  uint64_t pairs;
  if (!headers->len || !wg_read_len(&p, end, 0x90, &pairs)) return false;
  size_t name_len = strlen(name);
  for (uint64_t i = 0; i < pairs; i++) {
    uint64_t two;
    wg_str k, v;
    if (!wg_read_len(&p, end, 0x90, &two) || two != 2) return false;
    if (!wg_read_str(&p, end, &k)) return false;
    // Values are str or bin.
    if (p < end && *p >= 0xc4 && *p <= 0xc6) {
      uint8_t tag = *p++;
      uint64_t len;
      if (!wg_read_be(&p, end, 1 << (tag - 0xc4), &len) || (uint64_t)(end - p) < len) return false;
      v.ptr = p;
      v.len = (size_t)len;
      p += len;
    } else if (!wg_read_str(&p, end, &v)) {
      return false;
    }
    if (k.len == name_len && memcmp(k.ptr, name, name_len) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

#ifndef WHARF_FILTER
// Sets an error case with a copied message.
static bool wg_error(agent_error_t *err, uint8_t tag, const char *message) {
  err->tag = tag;
  agent_string_dup(&err->val.bad_request, message);
  return false;
}

// Streaming the answer of `handle` (the `streaming` import): wg_stream_start
// sends the status and headers at once, wg_stream_write each chunk of the
// body; what `handle` then returns only adds its body as the last chunk.
// Both return false when the host refused (a second start, a body past
// the response-body limit: stop writing).
static bool wg_stream_start(uint16_t status, const wg_buf *headers) {
  agent_list_u8_t list = {headers ? headers->ptr : NULL, headers ? headers->len : 0};
  agent_string_t why = {0};
  bool ok = wharf_plugin_streaming_start(status, &list, &why);
  if (!ok) agent_string_free(&why);
  return ok;
}

static bool wg_stream_write(const uint8_t *ptr, size_t len) {
  agent_list_u8_t list = {(uint8_t *)ptr, len};
  agent_string_t why = {0};
  bool ok = wharf_plugin_streaming_write(&list, &why);
  if (!ok) agent_string_free(&why);
  return ok;
}

// Calling another agent or pipeline through the host (the `peers` import;
// the caller's KDL block must list it in `calls`), with an empty header
// list. On success *resp is the callee's response (free it with
// wharf_plugin_peers_response_free). On failure *status is 403 (denied),
// 404 (not found), 508 (a loop) or the failure's own status, and `why`
// holds `CASE: message`.
static bool wg_call(const char *agent, const char *method, const char *path, const uint8_t *body,
                    size_t body_len, wharf_plugin_peers_response_t *resp, uint16_t *status,
                    wg_buf *why) {
  wg_buf head = {0};
  wg_put_byte(&head, 0x83);
  const char *fields[6] = {"method", method, "path", path, "query", ""};
  for (int i = 0; i < 6; i++) wg_put_msgpack_str(&head, (const uint8_t *)fields[i], strlen(fields[i]));
  wharf_plugin_peers_request_t req = {
      .head = {head.ptr, head.len}, .headers = {NULL, 0}, .body = {(uint8_t *)body, body_len}};
  agent_string_t name;
  agent_string_set(&name, agent);
  wharf_plugin_peers_call_error_t err = {0};
  bool ok = wharf_plugin_peers_call(&name, &req, resp, &err);
  free(head.ptr);
  if (ok) return true;
  static const char *cases[4] = {"denied", "not-found", "loop", "failed"};
  static const uint16_t statuses[3] = {403, 404, 508};
  agent_string_t *text = err.tag == WHARF_PLUGIN_PEERS_CALL_ERROR_FAILED ? &err.val.failed.f1 : &err.val.denied;
  *status = err.tag == WHARF_PLUGIN_PEERS_CALL_ERROR_FAILED ? err.val.failed.f0 : statuses[err.tag];
  wg_put_cstr(why, cases[err.tag]);
  wg_put_cstr(why, ": ");
  wg_put(why, text->ptr, text->len);
  wharf_plugin_peers_call_error_free(&err);
  return false;
}

// Publishing `len` bytes to `topic` through the host (the caller's block
// must allow it in `publishes`): how many subscribers it was queued for,
// or -1 when the host refused (the reason is dropped).
static int64_t wg_publish(const char *topic, const uint8_t *payload, size_t len) {
  agent_string_t name;
  agent_string_set(&name, topic);
  agent_list_u8_t list = {(uint8_t *)payload, len};
  uint32_t queued = 0;
  agent_string_t why = {0};
  if (!wharf_plugin_peers_publish(&name, &list, &queued, &why)) {
    agent_string_free(&why);
    return -1;
  }
  return queued;
}
#endif

#ifdef WHARF_A2A
// A2A helpers. What they build is allocated with malloc: hand it to an
// import (wharf_plugin_a2a_working, _add_artifact) and free it afterwards
// with the bindings' *_free, or return it (an outcome), which the bindings
// free after the call.

// Appends the text of a message's text parts, joined by newlines.
static void wg_a2a_text(const wharf_plugin_a2a_message_t *m, wg_buf *out) {
  bool first = true;
  for (size_t i = 0; i < m->parts.len; i++) {
    const wharf_plugin_a2a_content_t *c = &m->parts.ptr[i].content;
    if (c->tag != WHARF_PLUGIN_A2A_CONTENT_TEXT) continue;
    if (!first) wg_put_byte(out, '\n');
    wg_put(out, c->val.text.ptr, c->val.text.len);
    first = false;
  }
}

// One text part holding a copy of `len` bytes of `text`.
static wharf_plugin_a2a_list_part_t wg_a2a_text_parts(const char *text, size_t len) {
  wharf_plugin_a2a_part_t *part = calloc(1, sizeof *part);
  if (!part) abort();
  part->content.tag = WHARF_PLUGIN_A2A_CONTENT_TEXT;
  a2a_agent_string_dup_n(&part->content.val.text, text, len);
  return (wharf_plugin_a2a_list_part_t){part, 1};
}

// An agent message holding `text` (the host gives it an id).
static wharf_plugin_a2a_message_t wg_a2a_message(const char *text) {
  wharf_plugin_a2a_message_t m = {0};
  m.role = WHARF_PLUGIN_A2A_ROLE_AGENT;
  m.parts = wg_a2a_text_parts(text, strlen(text));
  return m;
}

// An artifact (or a chunk of one) named `id`, holding `len` bytes of `text`.
static wharf_plugin_a2a_artifact_t wg_a2a_artifact(const char *id, const char *text, size_t len) {
  wharf_plugin_a2a_artifact_t a = {0};
  a2a_agent_string_dup(&a.artifact_id, id);
  a2a_agent_string_dup(&a.name, id);
  a.parts = wg_a2a_text_parts(text, len);
  return a;
}

// Sets how a turn ends, with `text` as its status message (with
// WHARF_PLUGIN_A2A_TURN_STATE_DIRECT_REPLY, `text` is a direct reply: a
// message to the client and no task kept, see wg_a2a_reply).
static bool wg_a2a_outcome(wharf_plugin_a2a_outcome_t *ret, wharf_plugin_a2a_turn_state_t state, const char *text) {
  ret->state = state;
  ret->message.is_some = true;
  ret->message.val = wg_a2a_message(text);
  return true;
}

// Ends a turn with a direct reply: `text` answers the client as a message
// and no task is kept (on a new task's first turn that reported nothing;
// else the task completes with it).
static bool wg_a2a_reply(wharf_plugin_a2a_outcome_t *ret, const char *text) {
  return wg_a2a_outcome(ret, WHARF_PLUGIN_A2A_TURN_STATE_DIRECT_REPLY, text);
}
#endif

#endif
