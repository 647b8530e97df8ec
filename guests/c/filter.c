// filter (C): refuses paths below /admin with a JSON 403 naming the rule,
// attaches the request method as metadata, and marks every response with
// x-filtered-by: c. The same filter as guests/python/filter and
// guests/js/filter.
#define WHARF_FILTER
#include "wharf_guest.h"

static const char FORBIDDEN[] = "{\"error\":{\"code\":\"forbidden\",\"message\":\"admin paths are closed\"}}";

// A list of `n` strings copied from `items`.
static filter_list_string_t strings(const char *const *items, size_t n) {
  filter_list_string_t list = {calloc(n, sizeof(filter_string_t)), n};
  for (size_t i = 0; i < n; i++) filter_string_dup(&list.ptr[i], items[i]);
  return list;
}

filter_phases_t exports_filter_phases(void) {
  return WHARF_PLUGIN_FILTERING_PHASES_REQUEST_HEADERS | WHARF_PLUGIN_FILTERING_PHASES_RESPONSE_HEADERS;
}

void exports_filter_on_request_headers(filter_list_u8_t *head, filter_list_u8_t *headers,
                                       filter_verdict_t *ret) {
  memset(ret, 0, sizeof *ret);
  wg_str path = {0}, method = {0};
  wg_head_get(head, "path", &path);
  wg_head_get(head, "method", &method);
  if (path.len >= 6 && memcmp(path.ptr, "/admin", 6) == 0) {
    ret->decision.tag = WHARF_PLUGIN_FILTERING_DECISION_BLOCK;
    wharf_plugin_filtering_response_t *block = &ret->decision.val.block;
    block->status = 403;
    wg_buf h = {0};
    wg_headers_extend(&(filter_list_u8_t){0}, 1, &h);
    const char *json = "application/json";
    wg_put_header(&h, "content-type", (const uint8_t *)json, strlen(json));
    block->headers = wg_into_list(&h);
    wg_buf body = {0};
    wg_put_cstr(&body, FORBIDDEN);
    block->body = wg_into_list(&body);
    const char *ids[] = {"admin-path"};
    ret->audit.rule_ids = strings(ids, 1);
    filter_string_dup(&ret->audit.reason, "admin path");
  } else {
    ret->metadata.len = 1;
    ret->metadata.ptr = calloc(1, sizeof(filter_tuple2_string_string_t));
    filter_string_dup(&ret->metadata.ptr[0].f0, "c.method");
    filter_string_dup_n(&ret->metadata.ptr[0].f1, (const char *)method.ptr, method.len);
  }
  filter_list_u8_free(head);
  filter_list_u8_free(headers);
}

void exports_filter_on_request_body(filter_list_u8_t *head, filter_list_u8_t *headers,
                                    filter_list_u8_t *body, filter_verdict_t *ret) {
  memset(ret, 0, sizeof *ret);
  filter_list_u8_free(head);
  filter_list_u8_free(headers);
  filter_list_u8_free(body);
}

void exports_filter_on_response_headers(filter_list_u8_t *head, filter_list_u8_t *headers,
                                        uint16_t status, filter_list_u8_t *resp_headers,
                                        filter_verdict_t *ret) {
  (void)status;
  memset(ret, 0, sizeof *ret);
  ret->response_header_ops.len = 1;
  ret->response_header_ops.ptr = calloc(1, sizeof(wharf_plugin_filtering_header_op_t));
  wharf_plugin_filtering_header_op_t *op = &ret->response_header_ops.ptr[0];
  op->tag = WHARF_PLUGIN_FILTERING_HEADER_OP_SET;
  filter_string_dup(&op->val.set.f0, "x-filtered-by");
  wg_buf value = {0};
  wg_put_cstr(&value, "c");
  op->val.set.f1 = wg_into_list(&value);
  filter_list_u8_free(head);
  filter_list_u8_free(headers);
  filter_list_u8_free(resp_headers);
}

void exports_filter_on_response_body(filter_list_u8_t *head, filter_list_u8_t *headers,
                                     uint16_t status, filter_list_u8_t *resp_headers,
                                     filter_list_u8_t *body, filter_verdict_t *ret) {
  (void)status;
  memset(ret, 0, sizeof *ret);
  filter_list_u8_free(head);
  filter_list_u8_free(headers);
  filter_list_u8_free(resp_headers);
  filter_list_u8_free(body);
}
