// Pre-tokenizers of the byte-level BPE families (docs/tokenizer-format.md, "Encoding" step 4): the
// regular expression each family's tokenizer.json uses, written by hand over unicode.h's
// categories (no regex library). Input is valid UTF-8; output is the pieces in order, as
// [begin, end) byte offsets that tile the input exactly (no byte dropped or repeated).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/ml.h"

namespace ml {

enum class PreTokenizer : uint8_t { gpt2 = 0, llama3 = 1, qwen2 = 2, smollm = 3 };
inline constexpr int kPreTokenizerCount = 4;
const char *pretokenizer_name(PreTokenizer p);  // "gpt2", "llama3", "qwen2", "smollm"

// Puts the pieces of s[0..n) into *pieces (cleared first); n = 0 gives no pieces. Linear in n.
// ML_OK, or ML_E_NOMEM when *pieces cannot grow (then *pieces is cleared).
ml_status pretokenize(PreTokenizer kind, const char *s, size_t n, std::vector<std::pair<size_t, size_t>> *pieces);

}  // namespace ml
