#!/usr/bin/env bash
# The mutation audit (issue 20, "mutants caught"; issue 40 beyond the kernels): does the suite
# notice a deliberate one-line bug in the scalar reference, the runtime (forward pass, tokenizers,
# chat, sampler), the server or the converter's Python?
#
#   tools/mutants.sh [NAME...]      from the repository root; no argument = every mutant below
#
# Configures ONE extra build, the scalar preset with -DML_MUTANTS=ON (kernels/mutants.h compiles
# each mutant point as `if (ML_MUTANT("name")) <bug>`), in build/mutants (or $ML_MUTANTS_BUILD),
# builds it (ml_server too: its mutant points are compiled in as well), runs its suite once
# unmutated (it must pass: a broken baseline would "catch" everything), then once per mutant with
# ML_MUTANT=<name> (C++) or ML_PY_MUTANT=<name> (tools/*.py: `_mutant("name")`, tools/bpe_import.py):
# the quick tests of the mutant's file (quick_for below) first, the rest of the suite only if none
# of them failed. Prints per mutant the ctest tests that failed
# (caught it) or NOT CAUGHT, the total time, and as its last line `mutants caught: A/B`.
# Exit status 0 only if every mutant was caught (1: some not caught, 2: build or baseline failed).
#
# Left out of the mutant runs, because no mutant can change their outcome (the baseline runs the
# same selection plus the fixture setups):
#   - pure Python/node, no C++ of ours: fixture.* (write the test models; run once, by the
#     baseline), tools.python (the converter's tests) and tools.python.bpe (tools/bpe.py's: run,
#     with the baseline, only when a Python mutant is selected),
#     tokenizer.{corpus_current,
#     unicode_tables_current,pretokenize_oracle} (generated files are current);
#   - on the scalar preset the build IS the reference, so these compare the mutant with itself:
#     e2e.random, e2e.stories260K (forward<BuildKernels> vs forward<ScalarKernels>, one type
#     here) and logits.identical (ml_run vs ml_run --reference);
#   - numbers not checked: bench.* (speeds), isa.flags_vs_guard (compiler flags);
#   - tokenizer.oracle (byte-level BPE against npm tokenizers, ~20 s): it skips without node or
#     tools/npm/node_modules, and the count must not depend on what is installed; the byte-level
#     mutants must be caught by tests that always run (tokenizer.unicode, tokenizer.bpe).
# Environment: ML_MUTANTS_JOBS (ctest -j, default 2), ML_MUTANTS_TIMEOUT (per test, default 300 s).
set -u
cd "$(dirname "$0")/.." || exit 2

# The list of mutants: the ONE place that names them (name, then what the bug is). Every
# ML_MUTANT("...") in kernels/, runtime/, server/ and native/, and every _mutant("...") in tools/*.py,
# must be listed here (checked below). The second column is the file of the mutant point; it picks
# the quick tests (quick_for) and, for a .py file, ML_PY_MUTANT.
MUTANTS=(
  "q8_tie        kernels/scalar/quantize.cc  Q8_0 rounds halves toward +inf (floor(v + 0.5))"
  "rmsnorm_eps   kernels/scalar/rmsnorm.cc   rmsnorm without + eps"
  "softmax_max   kernels/scalar/softmax.cc   softmax without subtracting the maximum"
  "rope_sin      kernels/scalar/rope.cc      RoPE with the sin sign flipped"
  "rope_freq     runtime/state.cc            RoPE frequency exponent i/hd instead of 2i/hd"
  "silu          kernels/scalar/elementwise.cc  silu(x) = sigmoid(x), the x· dropped"
  "gqa_head      runtime/forward.cc          query head h reads kv head h % n_kv instead of h / kv_mul"
  "kv_pos        runtime/forward.cc          attention reads the KV cache one position short"
  "att_scale     runtime/forward.cc          attention scores divided by sqrt(dim) instead of sqrt(head_dim)"
  "ffn_residual  runtime/forward.cc          the FFN residual add dropped (x = W2·hb)"
  "shared_cls    runtime/model.cc            shared classifier bound to the wrong tensor (last w1)"
  "bpe_priority  runtime/text/tokenizer.cc   llama2.c BPE merges the rightmost of equal scores first"
  "topp_boundary runtime/sampler.cc          top-p cuts at cumulative >= p (drops the boundary candidate)"
  "utf8_stream   runtime/api.cc              text stream emits 3 bytes of a 4-byte UTF-8 character"
  # byte-level tokenizer (runtime/text/bpe_tokenizer.cc, runtime/text/pretokenize.cc)
  "pretok_contraction runtime/text/pretokenize.cc  Llama 3/Qwen2 pre-tokenizer matches contractions ('s 't ...) case-sensitively"
  # architectures (.mlb version 2)
  "qkv_bias      runtime/forward.cc          the k bias of Qwen2-style q/k/v biases is skipped"
  # .mlb version 3 (Qwen3)
  "qk_norm       runtime/forward.cc          Qwen3's per-head RMSNorm of k is skipped (q is still normed)"
  # beyond the kernels (issue 40): byte-level BPE, pre-tokenizer, normalization, special tokens
  "pretok_qwen_digits runtime/text/pretokenize.cc  Qwen2's pre-tokenizer takes up to 3 digits a piece (Llama 3's rule)"
  "bpe_leftmost  runtime/text/bpe_tokenizer.cc byte-level BPE merges the rightmost of equal-rank pairs first"
  "bpe_nfc       runtime/text/bpe_tokenizer.cc a tokenizer that declares NFC is not normalized"
  "bpe_special_split runtime/text/bpe_tokenizer.cc special tokens split out of the text even without special parsing"
  "bpe_add_bos   runtime/text/bpe_tokenizer.cc BOS prepended when asked although the file's add_bos is clear"
  "bpe_byte_table tools/bpe_import.py        the converter's GPT-2 byte->unicode table shifted by one"
  # chat templates and stop ids
  "chat_stop_chatml runtime/chat_api.cc      ChatML's stop ids leave out <|im_end|> (only EOS/EOT/the file's stops)"
  "chat_stop_llama3 runtime/chat_api.cc      Llama 3's stop ids leave out <|eot_id|>"
  "chat_zephyr_eos runtime/text/chat.cc      Zephyr renders each message without the EOS after it"
  # sampler stages
  "topp_late     runtime/sampler.cc          top-p tests the mass before a candidate: the nucleus cut one late"
  "sampler_seed  runtime/sampler.cc          the sampler ignores its seed (every seed draws as seed 1)"
  # server: request validation, API key, SSE framing, max_tokens, seed
  "server_key_prefix server/http_policy.cc   the API key compared over the bytes sent only (a prefix passes)"
  "server_key_scheme server/http_policy.cc   the Authorization scheme not checked (\"Basic KEY\" passes)"
  "server_cors_any server/http_policy.cc     every Origin allowed by --cors-origin (a page from anywhere may call)"
  "server_top_p  server/request.cc           a request's top_p = 0 passes validation"
  "server_max_tokens server/scheduler.cc     one token more than max_tokens"
  "server_sse    server/ml_server.cc         a streamed event ends with one newline, not an empty line"
  "server_seed   server/request.cc           the request's seed ignored (a fresh one per request)"
  # GGUF read by the runtime (issue 32): the container, the transcoding, the new block types' kernels
  "gguf_overlap  runtime/gguf.cc             two tensors overlapping in the data section accepted"
  "gguf_qwen2_perm runtime/gguf_model.cc     qwen2's half-split q/k rows taken as they are"
  "gguf_kq_min_sign kernels/ggml_blocks.cc   Q4_K/Q5_K's min added instead of subtracted"
  "gguf_q6k_half kernels/ggml_blocks.cc      Q6_K's second 16-element scale of a block taken from the first"
  "kq_half_scale kernels/scalar/matvec.cc    d2 blocks: the second half scaled by the first half's scale"
  "kq_offset_eight kernels/scalar/matvec.cc  Q4 blocks with offsets: the 8·d of the unsigned nibbles dropped"
)

BUILD=${ML_MUTANTS_BUILD:-build/mutants}
JOBS=${ML_MUTANTS_JOBS:-2}
TIMEOUT=${ML_MUTANTS_TIMEOUT:-300}
EXCLUDE_ALWAYS='tokenizer\.(corpus_current|unicode_tables_current|pretokenize_oracle|oracle)|e2e\.random|e2e\.stories260K|logits\.identical|bench\..*|isa\.flags_vs_guard'
EXCLUDE="^(tools\.python(\.bpe)?|$EXCLUDE_ALWAYS)\$"  # C++ mutants
# Python mutants (tools/bpe_import.py): tools.python.bpe, its own tests, runs too; the rest of the
# converter's tests (tools.python, ~90 s) stays out for time. A Python mutant in another file
# needs its tests' entry in quick_for and here.
EXCLUDE_PY="^(tools\.python|$EXCLUDE_ALWAYS)\$"
LOG="$BUILD/mutants-log"
# Run first for each mutant; the rest of the suite runs only if none of these fails. They are the
# numbers written in tests (pinned, logits.checksum) and the quantizer and tokenizer unit tests.
QUICK='^(pinned|logits\.checksum|quant|quant\.converter|tokenizer\.(bpe|unicode)|sampler)$'
# quick_for FILE: the quick tests of a mutant in FILE (the tests of that part, a few seconds each).
quick_for() {
  case $1 in
    server/*) echo '^server$' ;;  # test_server.py's functional classes (~5 s)
    runtime/text/chat.cc|runtime/chat_api.cc) echo '^(chat\.(render|api)|tokenizer\.bpe)$' ;;
    tools/bpe*.py | tools/mltk.py) echo '^tools\.python\.bpe$' ;;  # tools/tests/test_bpe.py (~20 s)
    runtime/gguf*.cc) echo '^gguf\.(types|cli)$' ;;  # the block types' weights, the reader's files (~15 s)
    kernels/ggml_blocks.cc) echo '^(gguf\.(types|cli)|quant\.ggml_blocks)$' ;;  # decoded blocks: transcoding and dequantization
    kernels/scalar/matvec.cc) echo '^(pinned|logits\.checksum|quant|gguf\.types)$' ;;
    # the forward: the llama2.c numbers, and the Qwen2/Llama 3/Qwen3 shapes against the float64
    # reference (qkv_bias, qk_norm: without reference.hf the whole suite ran, ~9 minutes)
    runtime/forward.cc) echo '^(pinned|logits\.checksum|reference\.hf|gguf\.types)$' ;;
    *) echo "$QUICK" ;;
  esac
}
t_start=$(date +%s)

names=()
declare -A file_of
for m in "${MUTANTS[@]}"; do
  read -r n f _ <<<"$m"
  names+=("$n")
  file_of[$n]=$f
done

# Every mutant point in the sources is listed, and every listed name exists in the sources.
in_src=$( { grep -rhoE 'ML_MUTANT\("[a-z0-9_]+"\)' kernels runtime server native
            grep -rhoE --include='*.py' '_mutant\("[a-z0-9_]+"\)' tools; } | sed -E 's/.*\("([a-z0-9_]+)"\)/\1/' | sort -u)
for n in $in_src; do
  if ! printf '%s\n' "${names[@]}" | grep -qx "$n"; then
    echo "mutants.sh: ML_MUTANT(\"$n\") in the sources is not in the list of tools/mutants.sh" >&2
    exit 2
  fi
done
for n in "${names[@]}"; do
  if ! printf '%s\n' $in_src | grep -qx "$n"; then
    echo "mutants.sh: mutant $n is listed but no ML_MUTANT(\"$n\") is in kernels/, runtime/, server/, native/ (or _mutant in tools/)" >&2
    exit 2
  fi
  if ! grep -qE "(ML_MUTANT|_mutant)\(\"$n\"\)" "${file_of[$n]}" 2>/dev/null; then
    echo "mutants.sh: mutant $n: its mutant point is not in ${file_of[$n]}, the file its row names" >&2
    exit 2
  fi
done

selected=("${names[@]}")
if [ $# -gt 0 ]; then
  selected=()
  for a in "$@"; do
    if ! printf '%s\n' "${names[@]}" | grep -qx "$a"; then
      echo "mutants.sh: unknown mutant '$a' (known: ${names[*]})" >&2
      exit 2
    fi
    selected+=("$a")
  done
fi

mkdir -p "$BUILD"
echo "mutants: configuring and building $BUILD (scalar preset, -DML_MUTANTS=ON)"
if ! cmake --preset scalar -B "$BUILD" -DML_MUTANTS=ON >"$BUILD/mutants-configure.log" 2>&1; then
  tail -n 30 "$BUILD/mutants-configure.log"; echo "mutants: configure FAILED" >&2; exit 2
fi
if ! cmake --build "$BUILD" -j "$JOBS" >"$BUILD/mutants-build.log" 2>&1; then
  tail -n 30 "$BUILD/mutants-build.log"; echo "mutants: build FAILED" >&2; exit 2
fi
mkdir -p "$LOG"

# run_suite <log> <exclude regex> [extra ctest args...]: runs the suite, echoes the failing tests.
run_suite() {
  local log=$1 exclude=$2; shift 2
  ctest --test-dir "$BUILD" -j "$JOBS" --timeout "$TIMEOUT" -E "$exclude" --output-on-failure "$@" >"$log" 2>&1
  local rc=$?
  # "The following tests FAILED:" then lines "\t  8 - e2e.random (Failed)"
  sed -n '/The following tests FAILED:/,$p' "$log" | sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) \(.*/\1/p'
  return $rc
}

t0=$(date +%s)
unset ML_MUTANT ML_PY_MUTANT
baseline_exclude=$EXCLUDE
for name in "${selected[@]}"; do
  case ${file_of[$name]} in *.py) baseline_exclude=$EXCLUDE_PY ;; esac  # the converter's tests must pass too
done
failed=$(run_suite "$LOG/baseline.log" "$baseline_exclude")
rc=$?
if [ $rc -ne 0 ] || [ -n "$failed" ]; then
  echo "mutants: the UNMUTATED suite fails (${failed:-ctest exit $rc}); see $LOG/baseline.log" >&2
  echo "mutants caught: 0/${#selected[@]}"
  exit 2
fi
echo "baseline (no mutant): passed ($(( $(date +%s) - t0 )) s)"

caught=0
for name in "${selected[@]}"; do
  t0=$(date +%s)
  # The quick tests first (a few seconds): most mutants are caught there; only a mutant they miss
  # pays for the rest of the suite.
  file=${file_of[$name]}
  quick=$(quick_for "$file")
  var=ML_MUTANT exclude=$EXCLUDE
  case $file in *.py) var=ML_PY_MUTANT exclude=$EXCLUDE_PY ;; esac
  failed=$(export "$var=$name"; run_suite "$LOG/$name.quick.log" "^fixture\\.|$exclude" -R "$quick" --fixture-exclude-setup '.*')
  rc=$?
  if [ -z "$failed" ] && [ $rc -eq 0 ]; then
    failed=$(export "$var=$name"; run_suite "$LOG/$name.log" "^fixture\\.|$exclude|$quick" --fixture-exclude-setup '.*')
    rc=$?
  fi
  dt=$(( $(date +%s) - t0 ))
  if [ -n "$failed" ]; then
    caught=$((caught + 1))
    printf '%-18s caught by: %s (%d s)\n' "$name" "$(echo $failed)" "$dt"
  elif [ $rc -ne 0 ]; then  # ctest failed without naming a test (e.g. no tests): count it as not caught
    printf '%-18s NOT CAUGHT (ctest exit %d without a failing test; see %s) (%d s)\n' "$name" "$rc" "$LOG/$name.log" "$dt"
  else
    printf '%-18s NOT CAUGHT (%d s)\n' "$name" "$dt"
  fi
done

echo "total time: $(( $(date +%s) - t_start )) s (logs in $LOG)"
echo "mutants caught: $caught/${#selected[@]}"
[ "$caught" -eq "${#selected[@]}" ]
