/* The verification harness as a library: every check a build must pass, as rows of results.
 * Used by the Catch2 tests (verify/tests/) and by the WebAssembly verification page, so both run
 * the same code. Each check compares a kernel implementation (or a whole forward pass) with the
 * scalar reference and reports the worst error against its stated tolerance.
 *
 * Tolerances (ml_check.tol), scaled by tol_scale (1 = the real ones; the browser test passes a
 * tiny value to prove the page can show failures):
 *   integer block sums       bit-exact (0)
 *   quantize_q8              bit-identical q and d (0)
 *   FP32 kernel outputs      1e-5, relative to the magnitude of what was summed (see each check)
 *   end-to-end logits, F32   1e-3, max |a − b| / max |b| over the vocabulary, per position
 *   end-to-end logits, Q8_0/Q4_0  bit-identical (0; the error is the count of differing logits)
 *   end-to-end greedy text   identical token ids
 */
#ifndef LEGACY_ML_VERIFY_H
#define LEGACY_ML_VERIFY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ml_check {
  char group[16];   /* "kernel", "quant", "e2e", "model" */
  char name[64];    /* e.g. "matvec_q8 [avx2]" */
  char shape[96];   /* e.g. "rows=37 K=64 r0=5 random" */
  double max_err;   /* worst error seen, in the unit of tol */
  double tol;       /* pass when max_err <= tol (and cases > 0) */
  long cases;       /* values / rows / positions compared; a check with 0 cases fails */
  int pass;
  char detail[192]; /* on failure: the first mismatch */
} ml_check;

typedef void (*ml_check_sink)(const ml_check *c, void *user);

/* Every kernel of the ABI, every implementation compiled into this build, on random inputs and the
 * named edge shapes, with buffers that end at a guard page. Returns the number of failed checks. */
int ml_verify_kernels(ml_check_sink sink, void *user, double tol_scale);

/* The harness checking itself: runs the kernel checks on deliberately wrong kernels (a matvec
 * that drops a block, an rmsnorm off by 1e-4, a quantizer that truncates). Every row
 * these produce must fail; returns the number of failed rows. */
int ml_verify_selftest(ml_check_sink sink, void *user);

/* Quantization properties of the scalar quantizers (error <= d/2, zero block, clamp, nibble order) and the
 * exact ties ±(k + 0.5) that pin each rounding rule (Q8_0 also for every quantize_q8 kernel variant). */
int ml_verify_quant(ml_check_sink sink, void *user, double tol_scale);

/* Converter parity: every quantized tensor of q_path equals the C++ quantizer applied to the same
 * tensor of f32_path (the same model converted with --wtype f32). */
int ml_verify_converter_parity(const char *f32_path, const char *q_path, ml_check_sink sink, void *user);

/* The build's forward pass against the scalar reference forward on one model, in one pass of
 * max(logit_steps, greedy_steps) positions from BOS: each generates greedily (its tokens must be the
 * reference's for `greedy_steps` positions), and the logits of the first `logit_steps` positions,
 * fed the same tokens, are compared (F32 within 1e-3, quantized bit for bit). */
int ml_verify_e2e(const char *model_path, int logit_steps, int greedy_steps, ml_check_sink sink, void *user,
                  double tol_scale);

/* Teacher forcing: feeds tokens[0..n-1] and counts positions p where argmax(logits) == tokens[p+1].
 * Returns the agreement in [0, 1], or -1 on error (ml_last_error()). */
double ml_verify_teacher_forced(const char *model_path, const int *tokens, int n, int reference);

/* Two files of the same weights in different layouts (docs/mlb-format.md) give bit-identical
 * logits over `steps` greedy positions, with the build's kernels. */
int ml_verify_same_logits(const char *path_a, const char *path_b, int steps, ml_check_sink sink, void *user);

/* Batched prefill: `n` tokens run through ml_eval_batch in chunks of `chunk` (all logits) give the
 * bits of feeding them one by one with ml_eval; one check per entry of `chunks`. */
int ml_verify_batch(const char *model_path, int n, const int *chunks, int n_chunks, ml_check_sink sink, void *user);

/* The logits of `steps` greedy positions are identical bit for bit for 1..max_threads threads. */
int ml_verify_threads(const char *model_path, int steps, int max_threads, ml_check_sink sink, void *user);

/* The checks above with a KV cache type (ml_options.kv_type; the plain ones use ML_KV_F32). */
int ml_verify_e2e_kv(const char *model_path, int logit_steps, int greedy_steps, int kv_type, ml_check_sink sink,
                     void *user, double tol_scale);
double ml_verify_teacher_forced_kv(const char *model_path, const int *tokens, int n, int reference, int kv_type);
int ml_verify_batch_kv(const char *model_path, int n, const int *chunks, int n_chunks, int kv_type, ml_check_sink sink,
                       void *user);
int ml_verify_threads_kv(const char *model_path, int steps, int max_threads, int kv_type, ml_check_sink sink, void *user);

/* The F16 KV cache's conversions (kernels/format/f16.h): the build's load against the integer
 * reference on every half, and round-to-nearest-even stores at ties and limits. */
int ml_verify_kv_f16(ml_check_sink sink, void *user);

#ifdef __cplusplus
}
#endif
#endif
