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
template <class K>
void forward(const Model &m, State &s, ThreadPool &pool, const int *tokens, int n, int pos, bool all_logits);

using ForwardFn = void (*)(const Model &, State &, ThreadPool &, const int *, int, int, bool);
ForwardFn forward_build();      // the build's kernels
ForwardFn forward_reference();  // the scalar reference kernels

}  // namespace ml
