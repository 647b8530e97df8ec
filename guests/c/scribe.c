// scribe (C): the streaming A2A agent of guests/scribe. Sent text, it
// writes the text back word by word as chunks of one artifact, each
// reaching streaming clients as it is reported, then completes; `count N`
// streams N chunks, `ping` is answered `pong` as a direct reply (a message,
// no task), `fail` fails the task, `reject` rejects it, `trap` traps. Its plain handle streams the words as server-sent events.
#define WHARF_A2A
#include <stdio.h>

#include "wharf_guest.h"

// The words of `text`: offsets and lengths, at most `max`.
static size_t split(const uint8_t *text, size_t len, size_t *at, size_t *n, size_t max) {
  size_t count = 0, i = 0;
  while (i < len && count < max) {
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) i++;
    if (i == len) break;
    at[count] = i;
    while (i < len && !(text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) i++;
    n[count] = i - at[count];
    count++;
  }
  return count;
}

static bool is(const uint8_t *word, size_t len, const char *s) {
  return len == strlen(s) && memcmp(word, s, len) == 0;
}

// Reports one chunk of artifact `id`.
static void chunk(const char *id, const char *text, size_t len, bool append, bool last) {
  wharf_plugin_a2a_artifact_t a = wg_a2a_artifact(id, text, len);
  wharf_plugin_a2a_add_artifact(&a, append, last);
  wharf_plugin_a2a_artifact_free(&a);
}

#define MAX_WORDS 4096

bool exports_wharf_plugin_a2a_handler_on_message(exports_wharf_plugin_a2a_handler_turn_t *turn,
                                                 exports_wharf_plugin_a2a_handler_outcome_t *ret,
                                                 exports_wharf_plugin_a2a_handler_error_t *err) {
  wg_buf text = {0};
  wg_a2a_text(&turn->message, &text);
  wharf_plugin_a2a_turn_free(turn);
  static size_t at[MAX_WORDS], n[MAX_WORDS];
  size_t words = split(text.ptr, text.len, at, n, MAX_WORDS);
  const uint8_t *t = text.ptr;
  char line[64];
  bool ok = true;
  if (words == 2 && is(t + at[0], n[0], "count")) {
    long count = 0;
    for (size_t i = 0; i < n[1]; i++) {
      uint8_t c = t[at[1] + i];
      if (c < '0' || c > '9' || count > 100000) count = -1;
      if (count < 0) break;
      count = count * 10 + (c - '0');
    }
    if (count < 0) {
      free(text.ptr);
      return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "that is not a count");
    }
    for (long i = 0; i < count; i++) {
      int len = snprintf(line, sizeof line, "%ld\n", i);
      chunk("count", line, (size_t)len, i > 0, i == count - 1);
    }
    snprintf(line, sizeof line, "counted to %ld", count);
    ok = wg_a2a_outcome(ret, WHARF_PLUGIN_A2A_TURN_STATE_COMPLETED, line);
  } else if (words == 1 && is(t + at[0], n[0], "ping")) {
    ok = wg_a2a_reply(ret, "pong");
  } else if (words == 1 && is(t + at[0], n[0], "fail")) {
    ok = wg_error(err, WHARF_PLUGIN_TYPES_ERROR_UNAVAILABLE, "asked to fail");
  } else if (words == 1 && is(t + at[0], n[0], "reject")) {
    ok = wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "I will not write that");
  } else if (words == 1 && is(t + at[0], n[0], "trap")) {
    abort();
  } else if (words == 0) {
    ok = wg_a2a_outcome(ret, WHARF_PLUGIN_A2A_TURN_STATE_INPUT_REQUIRED, "What shall I write?");
  } else {
    snprintf(line, sizeof line, "writing %zu words", words);
    // An option<message> import parameter is a pointer: NULL for none.
    wharf_plugin_a2a_message_t working = wg_a2a_message(line);
    wharf_plugin_a2a_working(&working);
    wharf_plugin_a2a_message_free(&working);
    wg_buf piece = {0};
    for (size_t i = 0; i < words; i++) {
      piece.len = 0;
      wg_put(&piece, t + at[i], n[i]);
      wg_put_byte(&piece, ' ');
      chunk("text", (const char *)piece.ptr, piece.len, i > 0, i == words - 1);
    }
    free(piece.ptr);
    snprintf(line, sizeof line, "wrote %zu words", words);
    ok = wg_a2a_outcome(ret, WHARF_PLUGIN_A2A_TURN_STATE_COMPLETED, line);
  }
  free(text.ptr);
  return ok;
}

bool exports_a2a_agent_handle(a2a_agent_request_t *req, a2a_agent_response_t *ret, a2a_agent_error_t *err) {
  wg_buf headers = {0};
  wg_list none = {0};
  wg_headers_extend(&none, 1, &headers);
  const char *sse = "text/event-stream";
  wg_put_header(&headers, "content-type", (const uint8_t *)sse, strlen(sse));
  bool ok = wg_stream_start(200, &headers);
  free(headers.ptr);
  static size_t at[MAX_WORDS], n[MAX_WORDS];
  size_t words = split(req->body.ptr, req->body.len, at, n, MAX_WORDS);
  wg_buf event = {0};
  for (size_t i = 0; ok && i < words; i++) {
    event.len = 0;
    wg_put_cstr(&event, "data: \"");
    wg_put(&event, req->body.ptr + at[i], n[i]);
    wg_put_cstr(&event, "\"\n\n");
    ok = wg_stream_write(event.ptr, event.len);
  }
  free(event.ptr);
  a2a_agent_request_free(req);
  if (!ok) return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_INTERNAL, "the host refused the streamed answer");
  wg_buf body = {0};
  wg_put_cstr(&body, "event: done\ndata: {}\n\n");
  ret->status = 200;
  ret->headers = (a2a_agent_list_u8_t){0};
  ret->body = wg_into_list(&body);
  return true;
}

void exports_a2a_agent_describe(a2a_agent_card_t *ret) {
  a2a_agent_string_dup(&ret->name, "scribe-c");
  a2a_agent_string_dup(&ret->version, "0.1.0");
  a2a_agent_string_dup(&ret->description, "Writes what it is sent back, word by word, as a streamed artifact (C)");
  wharf_plugin_types_skill_t *skill = calloc(1, sizeof *skill);
  if (!skill) abort();
  a2a_agent_string_dup(&skill->id, "write");
  a2a_agent_string_dup(&skill->name, "Write");
  a2a_agent_string_dup(&skill->description, "Streams the words it is sent back as artifact chunks");
  a2a_agent_string_t *tags = calloc(2, sizeof *tags);
  if (!tags) abort();
  a2a_agent_string_dup(&tags[0], "streaming");
  a2a_agent_string_dup(&tags[1], "text");
  skill->tags = (a2a_agent_list_string_t){tags, 2};
  ret->skills = (wharf_plugin_types_list_skill_t){skill, 1};
}

void exports_a2a_agent_health(a2a_agent_health_t *ret) { ret->tag = WHARF_PLUGIN_TYPES_HEALTH_OK; }
