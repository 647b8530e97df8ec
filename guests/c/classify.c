// classify (C): a keyword classifier. The body is UTF-8 text; words are runs
// of ASCII letters and digits, lower-cased. The answer is JSON:
// {"words":W,"labels":[{"label":L,"hits":H,"score":S},...]}, labels with
// hits only, most hits first (ties in table order), S = H*1000/total hits.
#include <stdio.h>

#include "wharf_guest.h"

#define LABELS 3
#define KEYWORDS 5

static const char *const label_names[LABELS] = {"billing", "outage", "security"};
static const char *const keywords[LABELS][KEYWORDS] = {
    {"invoice", "refund", "charge", "payment", "price"},
    {"down", "error", "outage", "timeout", "crash"},
    {"password", "breach", "phishing", "leak", "hacked"},
};

// Response headers: [["content-type", "application/json"]].
static const uint8_t json_headers[] = "\x91\x92\xac" "content-type" "\xb0" "application/json";

static bool is_utf8(const uint8_t *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint8_t c = s[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= len) return false;  // truncated sequence
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid.
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

static bool is_word_byte(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int label_of(const char *word, size_t len) {
  for (int l = 0; l < LABELS; l++)
    for (int k = 0; k < KEYWORDS; k++)
      if (strlen(keywords[l][k]) == len && memcmp(keywords[l][k], word, len) == 0) return l;
  return -1;
}

bool exports_agent_handle(agent_request_t *req, agent_response_t *ret, agent_error_t *err) {
  const uint8_t *body = req->body.ptr;
  size_t len = req->body.len;
  if (!is_utf8(body, len)) {
    agent_request_free(req);
    return wg_error(err, WHARF_PLUGIN_TYPES_ERROR_BAD_REQUEST, "body is not UTF-8");
  }
  unsigned hits[LABELS] = {0};
  unsigned words = 0, total = 0;
  char word[16];
  for (size_t i = 0; i < len;) {
    if (!is_word_byte(body[i])) {
      i++;
      continue;
    }
    size_t start = i;
    while (i < len && is_word_byte(body[i])) i++;
    words++;
    size_t n = i - start;
    if (n >= sizeof word) continue;  // longer than any keyword
    for (size_t k = 0; k < n; k++) {
      uint8_t c = body[start + k];
      word[k] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    int l = label_of(word, n);
    if (l >= 0) hits[l]++, total++;
  }
  agent_request_free(req);

  wg_buf out = {0};
  char num[64];
  snprintf(num, sizeof num, "{\"words\":%u,\"labels\":[", words);
  wg_put_cstr(&out, num);
  bool done[LABELS] = {false};
  bool first = true;
  for (;;) {
    int best = -1;
    for (int l = 0; l < LABELS; l++)
      if (!done[l] && hits[l] > 0 && (best < 0 || hits[l] > hits[best])) best = l;
    if (best < 0) break;
    done[best] = true;
    snprintf(num, sizeof num, "%s{\"label\":\"%s\",\"hits\":%u,\"score\":%u}", first ? "" : ",",
             label_names[best], hits[best], hits[best] * 1000 / total);
    wg_put_cstr(&out, num);
    first = false;
  }
  wg_put_cstr(&out, "]}");

  wg_buf headers = {0};
  wg_put(&headers, json_headers, sizeof json_headers - 1);
  ret->status = 200;
  ret->headers = wg_into_list(&headers);
  ret->body = wg_into_list(&out);
  return true;
}

void exports_agent_describe(agent_card_t *ret) {
  agent_string_dup(&ret->name, "classify");
  agent_string_dup(&ret->version, "0.1.0");
  agent_string_dup(&ret->description, "Labels text by keywords, with scores (C)");
  ret->skills = (wharf_plugin_types_list_skill_t){0};
}

void exports_agent_health(agent_health_t *ret) { ret->tag = WHARF_PLUGIN_TYPES_HEALTH_OK; }
