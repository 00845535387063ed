/* dll_smoke: the Windows wheel's DLLs used as python/legacy_ml/_native.py and legacy_ml.Llama use
   them, in C, under Wine (there is no Windows Python here). ctest python.dll (win-* presets, on the
   build's own DLLs) and verify/package_test.py (on the zip's wheel, three builds to choose from).
     dll_smoke DIR MODEL GOLDEN
   1. LoadLibrary DIR\ml_probe.dll; ml_probe_choose over the ml_<isa>.dll files in DIR (ML_ISA
      honoured, as the binding passes it); LoadLibrary DIR\ml_<chosen>.dll; every function by
      GetProcAddress (the prototypes are runtime/ml.h's, through __typeof__).
   2. What Llama(MODEL)("Once upon a time", max_tokens=196, temperature=0, echo=True) does: ml_open,
      ml_encode_ex (BOS, special), a session (ml_session_new / set_options / set_prompt, stop ids:
      BOS and the tokenizer's), the prompt echoed by ml_session_echo, then ml_session_next to the end.
   3. The text plus "\n" (llama2.c's run.c -n 200) to stdout in binary mode, "build <isa>: <why>" to
      stderr; the text compared with GOLDEN byte for byte.
   Exit status: 0 equal; 1 different or a failure (one line on stderr); 77 MODEL or GOLDEN missing. */
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "runtime/ml.h"

typedef int (*probe_choose_fn)(const char *, const char *, char *, size_t, char *, size_t);

#define DLL_API(X)                                                                                           \
  X(ml_last_error) X(ml_build_isa) X(ml_options_init) X(ml_open) X(ml_close) X(ml_encode_bound)          \
  X(ml_encode_ex) X(ml_get_tokenizer_info) X(ml_session_options_init) X(ml_session_new)                  \
  X(ml_session_set_options) X(ml_session_set_prompt) X(ml_session_echo) X(ml_session_next) X(ml_session_free)
#define ML_DECLARE(name) static __typeof__(&name) p_##name;
DLL_API(ML_DECLARE)

static void *sym(HMODULE lib, const char *name, const char *file) {
  FARPROC f = GetProcAddress(lib, name);
  if (!f) {
    fprintf(stderr, "dll_smoke: %s does not export %s\n", file, name);
    exit(1);
  }
  void *p;
  memcpy(&p, &f, sizeof p); /* a function pointer through GetProcAddress's FARPROC, as ctypes does */
  return p;
}

static HMODULE load(const char *dir, const char *file, char *path, size_t cap) {
  snprintf(path, cap, "%s\\%s", dir, file);
  HMODULE lib = LoadLibraryA(path);
  if (!lib) {
    fprintf(stderr, "dll_smoke: LoadLibrary %s failed (error %lu)\n", path, (unsigned long)GetLastError());
    exit(1);
  }
  return lib;
}

static void check(ml_status st, const char *what) {
  if (st != ML_OK) {
    fprintf(stderr, "dll_smoke: %s: %s (status %d)\n", what, p_ml_last_error(), (int)st);
    exit(1);
  }
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t cap = 0;
  *n = 0;
  for (;;) {
    if (*n == cap && !(buf = realloc(buf, cap = cap * 2 + 4096))) exit(1);
    const size_t got = fread(buf + *n, 1, cap - *n, f);
    if (!got) break;
    *n += got;
  }
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: dll_smoke DIR MODEL GOLDEN\n");
    return 1;
  }
  size_t golden_n;
  char *golden = read_file(argv[3], &golden_n);
  if (!golden || GetFileAttributesA(argv[2]) == INVALID_FILE_ATTRIBUTES) {
    fprintf(stderr, "dll_smoke: %s or %s is missing\n", argv[2], argv[3]);
    return 77;
  }
  _setmode(_fileno(stdout), _O_BINARY);

  /* _native.py's _installed(): the ISA libraries in DIR, space-separated */
  char installed[512] = "", pattern[MAX_PATH], path[MAX_PATH];
  snprintf(pattern, sizeof pattern, "%s\\ml_*.dll", argv[1]);
  WIN32_FIND_DATAA fd;
  HANDLE h = FindFirstFileA(pattern, &fd);
  if (h != INVALID_HANDLE_VALUE) {
    do {
      const size_t len = strlen(fd.cFileName);
      if (strcmp(fd.cFileName, "ml_probe.dll") == 0 || len <= 7) continue;
      char name[MAX_PATH];
      snprintf(name, sizeof name, "%.*s", (int)(len - 7), fd.cFileName + 3);  /* ml_<name>.dll */
      if (strlen(installed) + strlen(name) + 2 > sizeof installed) continue;
      if (installed[0]) strcat(installed, " ");
      strcat(installed, name);
    } while (FindNextFileA(h, &fd));
    FindClose(h);
  }
  HMODULE probe = load(argv[1], "ml_probe.dll", path, sizeof path);
  probe_choose_fn choose = (probe_choose_fn)sym(probe, "ml_probe_choose", path);
  char isa[64], why[1024];
  const int pst = choose(installed, getenv("ML_ISA"), isa, sizeof isa, why, sizeof why);
  if (pst != 0) {
    fprintf(stderr, "dll_smoke: ml_probe_choose: %s (status %d)\n", why, pst);
    return 1;
  }
  char file[96];
  snprintf(file, sizeof file, "ml_%s.dll", isa);
  HMODULE lib = load(argv[1], file, path, sizeof path);
#define ML_BIND(name) p_##name = (__typeof__(&name))sym(lib, #name, path);
  DLL_API(ML_BIND)
  fprintf(stderr, "build %s (installed: %s; the DLL says %s): %s\n", isa, installed, p_ml_build_isa(), why);

  ml_options o;
  p_ml_options_init(&o);
  o.n_threads = 2;
  ml_ctx *ctx = NULL;
  check(p_ml_open(&ctx, argv[2], NULL, &o), "ml_open");
  const char *prompt = "Once upon a time";
  const size_t cap = p_ml_encode_bound(ctx, strlen(prompt));
  int *ids = malloc(cap * sizeof *ids), n = 0;
  if (!ids) return 1;
  check(p_ml_encode_ex(ctx, prompt, ML_ENCODE_BOS | ML_ENCODE_SPECIAL, ids, (int)cap, &n), "ml_encode_ex");
  ml_tokenizer_info ti;
  check(p_ml_get_tokenizer_info(ctx, &ti), "ml_get_tokenizer_info");
  int stops[64], n_stops = 0;
  if (ti.bos_id >= 0) stops[n_stops++] = ti.bos_id;
  for (int i = 0; i < ti.n_stop && n_stops < 64; i++) stops[n_stops++] = ti.stop_ids[i];

  ml_session_options so;
  p_ml_session_options_init(&so);
  ml_session *s = NULL;
  check(p_ml_session_new(ctx, &so, &s), "ml_session_new");
  so.temperature = 0;
  so.max_tokens = 196;
  so.n_stop_ids = n_stops;
  so.stop_ids = stops;
  check(p_ml_session_set_options(s, &so), "ml_session_set_options");
  check(p_ml_session_set_prompt(s, ids, n, NULL), "ml_session_set_prompt");

  size_t out_cap = 1 << 16, out_n = 0;
  char *out = malloc(out_cap);
  if (!out) return 1;
#define ML_APPEND(text)                                                    \
  do {                                                                     \
    const size_t len_ = (text) ? strlen(text) : 0;                         \
    if (out_n + len_ + 2 > out_cap && !(out = realloc(out, out_cap *= 2))) \
      return 1;                                                            \
    memcpy(out + out_n, (text) ? (text) : "", len_);                       \
    out_n += len_;                                                         \
  } while (0)
  const char *text = NULL;
  for (int i = (n && ids[0] == ti.bos_id) ? 1 : 0; i < n; i++) {  /* Llama._echo */
    check(p_ml_session_echo(s, i ? ids[i - 1] : -1, ids[i], &text), "ml_session_echo");
    ML_APPEND(text);
  }
  int token = 0, finish = ML_FINISH_NONE;
  while (finish == ML_FINISH_NONE) {
    check(p_ml_session_next(s, &token, &text, &finish), "ml_session_next");
    ML_APPEND(text);
  }
  ML_APPEND("\n");
  p_ml_session_free(s);
  p_ml_close(ctx);
  fwrite(out, 1, out_n, stdout);
  fflush(stdout);
  if (out_n != golden_n || memcmp(out, golden, out_n) != 0) {
    size_t at = 0;
    while (at < out_n && at < golden_n && out[at] == golden[at]) at++;
    fprintf(stderr, "dll_smoke: the text differs from %s at byte %zu (%zu bytes, golden %zu)\n", argv[3], at, out_n,
            golden_n);
    return 1;
  }
  fprintf(stderr, "dll_smoke: %s's text, byte for byte\n", argv[3]);
  return 0;
}
