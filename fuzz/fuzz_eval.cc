// Fuzz target: a whole .mlb through the public C API, as ml_run uses it: the bytes are written
// to an in-memory file (memfd), opened with ml_open (FileMap's mmap path, the loader, the arena,
// the RoPE tables, the thread pool), evaluated token by token and sampled three ways, then
// evaluated again as one batch (ml_eval_batch, prefill), which must give the same bits.
//
// fuzz_mlb checks the loader's bounds byte-exactly; this target checks what comes after it on a
// model that loads: hostile weights (NaN, Inf, huge or denormal values, every quantized byte)
// and every small shape must run the forward pass and the sampler without a crash or undefined
// behaviour (UBSan: e.g. float-to-int conversions of NaN), give ids inside the vocab, and the
// batched forward pass the same logits as the single-token one. The context is capped at 4
// positions (ml_options.max_seq), the batch at 4, one thread.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"

namespace {

// One memfd for the process, rewritten for every input.
int memfd() {
  static int fd = [] {
    const int f = memfd_create("fuzz_eval.mlb", 0);
    if (f < 0) mlfuzz::violated("memfd_create failed");
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const int fd = memfd();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) mlfuzz::violated("memfd write");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  ml_options o;
  ml_options_init(&o);
  o.n_threads = 1;
  o.max_seq = 4;
  o.batch = 4;
  ml_ctx *ctx = nullptr;
  const ml_status s = ml_open(&ctx, path.c_str(), nullptr, &o);
  mlfuzz::g_accepted = s == ML_OK;
  if (s != ML_OK) {
    mlfuzz::check_error_line(s);
    ML_FUZZ_CHECK(ctx == nullptr, "no context after a failure");
    ML_FUZZ_CHECK(s == ML_E_FORMAT || s == ML_E_SHAPE || s == ML_E_NOMEM, ml_last_error());
    return 0;
  }
  ml_model_info info;
  ML_FUZZ_CHECK(ml_get_info(ctx, &info) == ML_OK, "info");
  ML_FUZZ_CHECK(info.file_bytes == size && info.max_seq >= 1 && info.max_seq <= 4, "info");

  // Every position of the (capped) context one token at a time, sampling each way; then the same
  // tokens as one ml_eval_batch (prefill), whose logits ml.h promises are bit-identical.
  const int n = info.max_seq;
  const int toks[4] = {0, info.vocab - 1, info.vocab / 2, 1 % info.vocab};
  std::vector<float> single(size_t(n) * size_t(info.vocab));
  for (int pos = 0; pos < n; ++pos) {
    const float *logits = nullptr;
    ML_FUZZ_CHECK(ml_eval(ctx, toks[pos], pos, &logits) == ML_OK, ml_last_error());
    std::memcpy(&single[size_t(pos) * size_t(info.vocab)], logits, sizeof(float) * size_t(info.vocab));
    const float temps[3] = {0.0f, 1.0f, 0.7f}, topps[3] = {0.9f, 1.0f, 0.5f};
    for (int k = 0; k < 3; ++k) {
      ML_FUZZ_CHECK(ml_sampler_set(ctx, temps[k], topps[k], 42) == ML_OK, "sampler");
      int next = -1;
      ML_FUZZ_CHECK(ml_sample(ctx, logits, &next) == ML_OK, "sample");
      ML_FUZZ_CHECK(next >= 0 && next < info.vocab, "sampled id in the vocab");
    }
  }
  const float *batch = nullptr;
  ML_FUZZ_CHECK(ml_eval_batch(ctx, toks, n, 0, 1, &batch) == ML_OK, ml_last_error());
  for (size_t i = 0; i < single.size(); ++i) {
    const float a = single[i], b = batch[i];
    // Bit-identical; a NaN only needs to stay a NaN (its payload is not a result).
    ML_FUZZ_CHECK((std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0,
                  "ml_eval_batch logits differ from ml_eval's");
  }
  const float *logits = nullptr;
  ML_FUZZ_CHECK(ml_eval(ctx, 0, info.max_seq, &logits) == ML_E_ARG, "position past the context");
  ml_close(ctx);
  return 0;
}
