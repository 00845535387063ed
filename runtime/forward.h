// The forward pass, written once against a kernel set (kernels/binding.h) so the build's kernels
// and the scalar reference run the same code (verify/ compares them).
#pragma once
#include "runtime/model.h"
#include "runtime/state.h"
#include "runtime/threads.h"

namespace ml {

// Runs the model on n <= s.batch tokens at positions pos .. pos+n-1 (their K/V go into the
// cache; positions < pos must be there already). Logits: of every token into s.logits rows
// 0..n-1 when all_logits, else of the last token only, into row 0. Token t of a batch gets the
// same bits as a one-token call at pos + t.
//
// With rows (not nullptr) the tokens are of several sequences of one family (ml_eval_family): token
// t goes at position rows->pos[t] of rows->kv[t]'s KV cache and attends to that cache's positions
// 0..rows->pos[t] only (`pos` is unused); s gives the scratch buffers, the RoPE tables and the
// logits (every row's: all_logits must be set). The caches share s's kv_type, every
// rows->pos[t] < s.max_seq, and no two rows write the same position of one cache. Each row gets the
// bits of a one-token call on its own state.
struct Rows {
  const int *pos;
  State *const *kv;
};
template <class K>
void forward(const Model &m, State &s, ThreadPool &pool, const int *tokens, int n, int pos, bool all_logits,
             const Rows *rows = nullptr);

using ForwardFn = void (*)(const Model &, State &, ThreadPool &, const int *, int, int, bool, const Rows *);
ForwardFn forward_build();      // the build's kernels
ForwardFn forward_reference();  // the scalar reference kernels

}  // namespace ml
