// echo (C): answers 200 with the request body and headers, plus
// x-echo-method and x-echo-path taken from the request head. With
// x-echo-chunks: N (1-64) it streams the answer: the head at once, the body
// in N pieces, the last one returned by handle. With x-echo-call: AGENT it
// calls AGENT through the host with the body and answers with its status
// and body (a refused or failed call: its status and `CASE: message`); with
// x-echo-publish: TOPIC it publishes the body and adds x-echo-queued.
#include <stdio.h>

#include "wharf_guest.h"

// Answers with what AGENT (the header's value) answered to the body.
static bool call_through(agent_request_t *req, wg_str to, agent_response_t *ret) {
  char agent[65] = {0};
  memcpy(agent, to.ptr, to.len < 64 ? to.len : 64);
  wharf_plugin_peers_response_t resp;
  uint16_t status = 0;
  wg_buf why = {0};
  if (wg_call(agent, "POST", "/", req->body.ptr, req->body.len, &resp, &status, &why)) {
    ret->status = resp.status;
    ret->headers = (agent_list_u8_t){0};
    ret->body = resp.body;
    resp.body = (agent_list_u8_t){0};
    wharf_plugin_peers_response_free(&resp);
  } else {
    ret->status = status;
    ret->headers = (agent_list_u8_t){0};
    ret->body = wg_into_list(&why);
  }
  agent_request_free(req);
  return true;
}

// The number in `s` when it is 1-64, else 0.
static size_t chunk_count(wg_str s) {
  size_t n = 0;
  for (size_t i = 0; i < s.len; i++) {
    if (s.ptr[i] < '0' || s.ptr[i] > '9' || n > 64) return 0;
    n = n * 10 + (s.ptr[i] - '0');
  }
  return n >= 1 && n <= 64 ? n : 0;
}

bool exports_agent_handle(agent_request_t *req, agent_response_t *ret, agent_error_t *err) {
  wg_str method = {0}, path = {0};
  if (!wg_head_get(&req->head, "method", &method) || !wg_head_get(&req->head, "path", &path)) {
    agent_request_free(req);
    return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "malformed request head");
  }
  wg_str to;
  if (wg_header_get(&req->headers, "x-echo-call", &to)) return call_through(req, to, ret);
  wg_str topic;
  bool publish = wg_header_get(&req->headers, "x-echo-publish", &topic);
  wg_buf headers = {0};
  if (!wg_headers_extend(&req->headers, publish ? 3 : 2, &headers)) {
    agent_request_free(req);
    return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "malformed request headers");
  }
  wg_put_header(&headers, "x-echo-method", method.ptr, method.len);
  wg_put_header(&headers, "x-echo-path", path.ptr, path.len);
  if (publish) {
    char name[257] = {0}, queued[24];
    memcpy(name, topic.ptr, topic.len < 256 ? topic.len : 256);
    int64_t n = wg_publish(name, req->body.ptr, req->body.len);
    int len = n < 0 ? snprintf(queued, sizeof queued, "refused") : snprintf(queued, sizeof queued, "%lld", (long long)n);
    wg_put_header(&headers, "x-echo-queued", (const uint8_t *)queued, (size_t)len);
  }
  wg_str chunks_header;
  if (wg_header_get(&req->headers, "x-echo-chunks", &chunks_header)) {
    size_t chunks = chunk_count(chunks_header);
    if (!chunks) {
      free(headers.ptr);
      agent_request_free(req);
      return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "malformed request: x-echo-chunks must be 1 to 64");
    }
    bool ok = wg_stream_start(200, &headers);
    free(headers.ptr);
    size_t len = req->body.len, size = (len + chunks - 1) / chunks, at = 0;
    if (size == 0) size = 1;
    while (ok && len - at > size) {
      ok = wg_stream_write(req->body.ptr + at, size);
      at += size;
    }
    if (!ok) {
      agent_request_free(req);
      return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_INTERNAL, "the host refused the streamed answer");
    }
    // The last piece is the returned body.
    wg_buf last = {0};
    wg_put(&last, req->body.ptr + at, len - at);
    ret->status = 200;
    ret->headers = (agent_list_u8_t){0};
    ret->body = wg_into_list(&last);
    agent_request_free(req);
    return true;
  }
  ret->status = 200;
  ret->headers = wg_into_list(&headers);
  // The body moves from request to response: no copy.
  ret->body = req->body;
  req->body = (agent_list_u8_t){0};
  agent_request_free(req);
  return true;
}

void exports_agent_describe(agent_card_t *ret) {
  agent_string_dup(&ret->name, "echo");
  agent_string_dup(&ret->version, "0.1.0");
  agent_string_dup(&ret->description, "Returns the request body and headers (C)");
  ret->skills = (wharf_plugin_types_list_skill_t){0};
}

void exports_agent_health(agent_health_t *ret) { ret->tag = WHARF_PLUGIN_TYPES_HEALTH_OK; }
