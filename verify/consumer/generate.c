/* Greedy text generation through the installed C API only, as llama2.c's run.c generates:
 *   generate MODEL.mlb TOKENIZER.bin STEPS PROMPT
 * prints the prompt and its continuation on stdout (run.c's bytes), and on stderr the ISA the
 * library was built for. verify/install_test.py compares stdout with ../shared/golden. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <legacy-ml/ml.h>

static int die(const char *what, ml_status s) {
  fprintf(stderr, "generate: %s: %s: %s\n", what, ml_status_name(s), ml_last_error());
  return (int)s;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: generate MODEL.mlb TOKENIZER.bin STEPS PROMPT\n");
    return 6;
  }
  const int steps = atoi(argv[3]);
  ml_ctx *ctx = NULL;
  ml_options o;
  ml_options_init(&o);
  o.n_threads = 1;
  ml_status s = ml_open(&ctx, argv[1], argv[2], &o);
  if (s != ML_OK) return die("open", s);
  size_t cap = ml_encode_bound(ctx, strlen(argv[4]));
  int *prompt = malloc(cap * sizeof *prompt), n_prompt = 0;
  if (!prompt) return die("malloc", ML_E_NOMEM);
  if ((s = ml_encode(ctx, argv[4], 1, prompt, (int)cap, &n_prompt)) != ML_OK) return die("encode", s);
  if ((s = ml_sampler_set(ctx, 0.0f, 0.9f, 1)) != ML_OK) return die("sampler", s);
  ml_text_stream ts;
  memset(&ts, 0, sizeof ts);
  int token = prompt[0];
  for (int pos = 0; pos < steps; ++pos) {
    const float *logits;
    int next;
    if ((s = ml_eval(ctx, token, pos, &logits)) != ML_OK) return die("eval", s);
    if (pos < n_prompt - 1) {
      next = prompt[pos + 1];
    } else if ((s = ml_sample(ctx, logits, &next)) != ML_OK) {
      return die("sample", s);
    }
    if (next == 1) break; /* BOS ends the text, as in run.c */
    const char *piece = ml_decode(ctx, token, next);
    if (piece) {
      char *out = malloc(strlen(piece) + 4);
      if (!out) return die("malloc", ML_E_NOMEM);
      fwrite(out, 1, ml_text_stream_feed(&ts, piece, out), stdout);
      free(out);
    }
    token = next;
  }
  printf("\n");
  ml_model_info info;
  if (ml_get_info(ctx, &info) == ML_OK) fprintf(stderr, "generate: library ISA %s\n", info.isa);
  free(prompt);
  ml_close(ctx);
  return 0;
}
