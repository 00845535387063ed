// Small helpers shared by the command-line programs: strict number parsing, timing, and what a
// program says after opening a model.
#pragma once
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/file_map.h"
#include "runtime/ml.h"

namespace ml::cli {

inline bool parse_int(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

inline bool parse_u64(const char *s, unsigned long long *out) {
  if (!s || !*s || *s == '-') return false;
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

inline bool parse_float(const char *s, float *out) {
  if (!s || !*s) return false;
  char *end = nullptr;
  errno = 0;
  const float v = std::strtof(s, &end);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

// FILE's bytes (an empty file is an empty text): ML_OK, or ML_E_IO with ml_last_error() naming
// `what` and the path.
inline ml_status read_file(const char *what, const char *path, std::string *out) {
  std::FILE *f = ml::fopen_utf8(path, "rb");
  if (!f) return ml::fail(ML_E_IO, "cannot open %s file %s: %s", what, path, std::strerror(errno));
  out->clear();
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  const bool bad = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  return bad ? ml::fail(ML_E_IO, "cannot read %s file %s: %s", what, path, std::strerror(err)) : ML_OK;
}

// Token ids from the text [s, end): integers in [0, vocab) separated by the characters of `seps`;
// false at the first entry that is not one, with "WHAT: entry N ("...") is not a token id in
// [0, vocab)" on stderr (`what`: the program and its option, "ml_run: --token-ids").
inline bool parse_token_ids(const char *what, const char *s, const char *end, const char *seps, int vocab,
                            std::vector<int> *ids) {
  ids->clear();
  for (const char *p = s; p < end;) {
    if (*p && std::strchr(seps, *p)) {
      ++p;
      continue;
    }
    char *e = nullptr;
    errno = 0;
    const long v = std::strtol(p, &e, 10);
    if (e == p || errno != 0 || v < 0 || v >= vocab) {
      std::fprintf(stderr, "%s: entry %zu (\"%.12s\") is not a token id in [0, %d)\n", what, ids->size() + 1, p, vocab);
      return false;
    }
    ids->push_back(static_cast<int>(v));
    p = e;
  }
  return true;
}

// A prompt's tokens, as ml_run and ml_server build them: rendered chat text (chat) as ml_chat_encode
// (BOS only where the template writes it), else the text as ml_encode with BOS (run.c's); when that
// gives none (a byte-level tokenizer without BOS, an empty text), eos_id if it is >= 0. Empty after
// ML_OK: neither BOS nor EOS to start from.
inline ml_status encode_prompt(ml_ctx *ctx, const std::string &text, bool chat, int eos_id, std::vector<int> *ids) {
  ids->resize(ml_encode_bound(ctx, text.size()));
  int n = 0;
  const ml_status s = chat ? ml_chat_encode(ctx, text.c_str(), ids->data(), int(ids->size()), &n)
                           : ml_encode(ctx, text.c_str(), 1, ids->data(), int(ids->size()), &n);
  ids->resize(s ? 0 : size_t(n));
  if (!s && ids->empty() && eos_id >= 0) ids->push_back(eos_id);
  return s;
}

// A chat format: `name` (--chat-template) when given, else the tokenizer's template's; then its
// end-of-turn and stop ids (ml_chat_stop_ids). On failure *format tells which step failed: still
// ML_CHAT_UNKNOWN, naming or detecting the format; else the stop ids.
inline ml_status chat_format(const ml_ctx *ctx, const char *name, ml_chat_format *format, const int **ids, int *n) {
  *format = ML_CHAT_UNKNOWN;
  if (const ml_status s = name ? ml_chat_parse_name(name, format) : ml_chat_detect(ctx, format)) return s;
  return ml_chat_stop_ids(ctx, *format, ids, n);
}

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// After ml_open: the tokenizer's facts, or false with one line on stderr saying why there are none
// (an .mlb opened without -z, or a GGUF whose metadata holds no tokenizer the runtime reads), and
// the load note of a GGUF (what was converted, how long it took) on stderr.
inline bool opened(const char *prog, ml_ctx *ctx, bool tokenizer_given, ml_model_info *info, ml_tokenizer_info *tok) {
  ml_get_info(ctx, info);
  if (ml_get_tokenizer_info(ctx, tok) != ML_OK) {
    if (tokenizer_given || info->format[0] == 'g')
      std::fprintf(stderr, "%s: %s (-z TOKENIZER)\n", prog, ml_last_error());
    else
      std::fprintf(stderr, "%s: no tokenizer given: pass -z TOKENIZER (an .mlb model carries none)\n", prog);
    return false;
  }
  if (info->load_note[0]) std::fprintf(stderr, "%s: %s\n", prog, info->load_note);
  return true;
}

}  // namespace ml::cli
