// echo (C): answers 200 with the request body and headers, plus
// x-echo-method and x-echo-path taken from the request head.
#include "wharf_guest.h"

bool exports_agent_handle(agent_request_t *req, agent_response_t *ret, agent_error_t *err) {
  wg_str method = {0}, path = {0};
  if (!wg_head_get(&req->head, "method", &method) || !wg_head_get(&req->head, "path", &path)) {
    agent_request_free(req);
    return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "malformed request head");
  }
  wg_buf headers = {0};
  if (!wg_headers_extend(&req->headers, 2, &headers)) {
    agent_request_free(req);
    return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "malformed request headers");
  }
  wg_put_header(&headers, "x-echo-method", method.ptr, method.len);
  wg_put_header(&headers, "x-echo-path", path.ptr, path.len);
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
