// The forward pass for one token, written once against a kernel set (kernels/binding.h) so the
// build's kernels and the scalar reference run the same code (verify/ compares them).
#pragma once
#include "runtime/model.h"
#include "runtime/state.h"
#include "runtime/threads.h"

namespace ml {

// Runs the model on `token` at position `pos`; leaves the logits in s.logits. K/V of `pos` are
// written into the cache; positions < pos must already be there.
template <class K>
void forward(const Model &m, State &s, ThreadPool &pool, int token, int pos);

using ForwardFn = void (*)(const Model &, State &, ThreadPool &, int, int);
ForwardFn forward_build();      // the build's kernels
ForwardFn forward_reference();  // the scalar reference kernels

}  // namespace ml
