// JSON-schema constrained decoding (issue 34, item 3): a schema (a subset of JSON Schema, below)
// is compiled into a byte-level pushdown matcher; JsonConstraint turns the matcher into a mask of
// the token ids that may come next, so the generated text always parses as JSON and validates.
//
// Subset (docs/json-schema.md): type (object, array, string, number, integer, boolean, null or a
// list of them), properties, required, additionalProperties (true, false or absent: true means any
// other key with any JSON value), items (one schema), minItems/maxItems, enum, const, anyOf (alone
// in its schema object, beside annotations), minLength/maxLength (code points), boolean schema true.
// The whole schema {"type":"json_object"} means any JSON object. Annotations (title, description,
// $schema, $id, $comment, default, examples, deprecated, readOnly, writeOnly) are ignored; any other
// keyword is ML_E_ARG with `schema keyword "pattern" at /properties/name is not supported` (JSON
// pointer of the schema object, "/" for the root). Malformed schema text: `schema JSON: ... at byte N`.
//
// The text the matcher accepts (a subset of JSON, chosen so that every walk can end):
//   - whitespace: at most one space after ':' and after ','; none anywhere else (no newlines);
//   - numbers: JSON's grammar with at most 15 digits before the exponent and at most 2 exponent
//     digits; "integer" is -?(0|[1-9][0-9]*) (no fraction, no exponent: 1.0 is refused though
//     JSON Schema would accept it — the matcher may refuse valid JSON, never accept invalid);
//   - strings: JSON escapes (\uXXXX surrogate pairs must pair: a lone or reversed surrogate is
//     refused), valid UTF-8 (no overlongs, surrogates, > U+10FFFF), no raw bytes < 0x20;
//     min/maxLength count code points (an escape or a pair is one);
//   - object keys not named in properties: at most 64 code points, written without escapes; a key
//     is never repeated when it is a property (extra keys may repeat: JSON.parse keeps the last);
//   - enum/const values: exactly their compact serialization (numbers spelled as in the schema),
//     and only those that the schema object's other keywords accept (none left: ML_E_ARG);
//   - nesting: at most 64 open containers (only reachable through "any value" schemas);
//   - anyOf: at most 64 alternative states at once; past that, the later ones are dropped (what
//     is generated stays valid; some valid texts of such a schema become unreachable).
//
// Matching: a state is a stack of frames (object/array/string/number/literal/value-to-come); a
// set of such stacks carries anyOf and type alternatives (usually one). feed() is byte by byte.
//
// Token masks: JsonVocab sorts the vocabulary's byte strings once per tokenizer (shared-prefix
// lengths kept); JsonConstraint walks them with per-depth state copies, skipping every token below
// a rejected prefix. Inside a string (the common case) or a key not named in properties, tokens of
// plain text (complete UTF-8, no '"', '\\' or control bytes) are allowed by their code-point length
// alone; only the other tokens are walked. Cost at ~150k tokens: 0.05-0.4 ms a mask, 0.3 s for
// JsonVocab::init (docs/json-schema.md).
// Assumption, checked by JsonVocab::init(): the vocabulary has a single-byte token for every byte
// of compact JSON text (0x20..0x7E, 0x80..0xBF, 0xC2..0xF4) — byte-level BPE has all 256,
// llama2.c tokenizers their <0xNN> tokens — so every incomplete state allows at least one token.
// Tokens with an empty byte string (BOS/EOS/special tokens: the caller's choice) are never allowed;
// the caller allows EOS when complete() and stops when finished().
//
// Use: JsonVocab::init(token_bytes) once per tokenizer; per request JsonSchema::compile and
// JsonConstraint::init(schema, vocab); per step allowed(&mask), sample among mask[id] == 1,
// accept(id). The schema text is parsed by nlohmann-json (this library, structured/, is the one
// place JSON is read: the runtime below it stays libc-only).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ml.h"

namespace ml {

class Tokenizer;

class JsonSchema {
 public:
  // Parses and compiles schema text (bytes may be hostile). On error: ML_E_ARG, *err says why.
  static ml_status compile(const char *schema_json, size_t n, JsonSchema *out, std::string *err);

  // Internal representation (used by the matcher; node 0 is "any value").
  enum : uint8_t { kObj = 1, kArr = 2, kStr = 4, kNum = 8, kInt = 16, kBool = 32, kNull = 64, kAll = 127 };
  struct Prop {
    std::string key;  // the key as written between the quotes (JSON-escaped)
    int node;
    bool required;
  };
  struct Node {
    uint8_t types = kAll;
    int lit_lo = -1, lit_hi = -1;  // enum/const: literals_[lit_lo, lit_hi), sorted
    std::vector<int> any_of;
    std::vector<Prop> props;       // sorted by key bytes
    uint64_t required_mask = 0;    // bit i: props[i] is required
    bool additional = true;
    int items = 0;                 // node of every item
    uint32_t min_items = 0, max_items = UINT32_MAX;
    uint32_t min_len = 0, max_len = UINT32_MAX;
  };
  const std::vector<Node> &nodes() const { return nodes_; }
  const std::vector<std::string> &literals() const { return literals_; }  // 0 false, 1 true, 2 null
  int root() const { return root_; }
  // The fewest bytes of a value of node i (saturating at 2^40).
  uint64_t min_bytes(int i) const { return min_bytes_[size_t(i)]; }

 private:
  friend class SchemaCompiler;
  void compute_min_bytes();
  std::vector<uint64_t> min_bytes_;
  std::vector<Node> nodes_;
  std::vector<std::string> literals_;
  int root_ = 0;
};

// One frame of the matcher's stack (plain data: compared and copied bytewise).
struct JsonFrame {
  int32_t node;
  uint8_t kind, phase, ws, flag;   // flag: number is integer-only / object key may be an extra key
  uint8_t need, u_lo, u_hi, esc;   // UTF-8 continuation bytes still due and the next one's range; escape state
  uint8_t d1, nexp, pad0, pad1;    // first hex digit of a \u escape; exponent digits
  uint32_t count;                  // string/key code points, array items, number digits
  uint32_t lo, hi, pos;            // literal or property-key candidates [lo, hi) and the byte position
  int32_t key;                     // object: index of the property whose value is coming (-1: extra key)
  uint32_t pad2;
  uint64_t seen;                   // object: properties already given
};

static_assert(sizeof(JsonFrame) == 48, "JsonFrame has no padding: stacks are compared with memcmp");

// A set of alternative stacks, stored flat.
struct JsonState {
  std::vector<JsonFrame> frames;
  std::vector<uint32_t> starts;  // stack i = frames[starts[i], starts[i+1] or end)
  size_t n_stacks() const { return starts.size(); }
};

// Byte-level matcher: the text accepted so far is a prefix of a valid document.
class JsonMatcher {
 public:
  void reset(const JsonSchema &schema);
  // Feeds bytes; false (state unchanged) when some byte cannot continue the text.
  bool feed(const char *bytes, size_t n);
  bool complete() const;  // the text is a whole valid document
  bool finished() const;  // complete and no byte can follow (e.g. a closed object, a root integer 0)
  // The fewest bytes that complete the document (0 when complete): some allowed byte lowers it by
  // one, so a caller near its token limit can steer to a valid end (e.g. pick tokens that lower it).
  uint64_t min_remaining() const;
  // Transition helpers used by JsonConstraint's walk: out = in after byte b (no stack: rejected).
  static void step(const JsonSchema &s, const JsonState &in, uint8_t b, JsonState *out);
  static bool complete(const JsonSchema &s, const JsonState &st);
  const JsonState &state() const { return st_; }

 private:
  const JsonSchema *schema_ = nullptr;
  JsonState st_, tmp_;
};

// The byte strings of every token id, as the caller builds them ("" = never allowed).
using TokenBytes = std::vector<std::string>;
// llama2.c tokenizers: pieces as stored (leading space included), <0xNN> -> that byte, ids 0..2
// (unk, BOS, EOS) empty; byte-level: each token's bytes, special/added/absent tokens empty.
ml_status token_bytes_of(const Tokenizer &tok, TokenBytes *out);

// A vocabulary prepared for masks: built once per tokenizer (sorting ~150k tokens takes ~0.2 s),
// shared read-only by every JsonConstraint (any schema, any number of requests).
class JsonVocab {
 public:
  // ML_E_ARG, *err naming the byte, when the vocabulary lacks a single-byte token it needs.
  ml_status init(const TokenBytes &tokens, std::string *err);
  int size() const { return int(tokens_.size()); }
  const std::string &bytes(int id) const { return tokens_[size_t(id)]; }

 private:
  friend class JsonConstraint;
  struct Sorted {
    std::vector<int> ids;        // token ids by byte string
    std::vector<uint16_t> lcp;   // common prefix length with the previous entry (capped)
  };
  TokenBytes tokens_;
  std::vector<int32_t> plain_cp_;  // code points of a plain-text token, -1 otherwise
  Sorted all_, special_;           // every token / the non-plain ones
  std::vector<int> by_plain_len_;  // plain tokens by code-point length
  size_t max_len_ = 0;             // the longest token's bytes
};

// The constraint of one generation: cheap to set up (the schema and the vocabulary must outlive it).
class JsonConstraint {
 public:
  ml_status init(const JsonSchema &schema, const JsonVocab &vocab);
  void reset();                               // back to the empty text
  // mask[id] = 1 when token id may come next, else 0 (mask resized to the vocabulary).
  void allowed(std::vector<uint8_t> *mask);
  void allowed_walk_only(std::vector<uint8_t> *mask);  // the same without the plain-text shortcut (tests)
  bool accept(int token);                     // advances; false (unchanged) for a masked token
  bool feed(const char *bytes, size_t n) { return m_.feed(bytes, n); }
  bool complete() const { return m_.complete(); }
  bool finished() const { return m_.finished(); }
  uint64_t min_remaining() const { return m_.min_remaining(); }
  const JsonMatcher &matcher() const { return m_; }
  int vocab() const { return vocab_ ? vocab_->size() : 0; }

 private:
  void walk(const JsonVocab::Sorted &list, std::vector<uint8_t> *mask);
  bool fits(int id);  // token id can follow (one token's own walk)
  const JsonSchema *schema_ = nullptr;
  const JsonVocab *vocab_ = nullptr;
  std::vector<JsonState> depth_;   // walk scratch: state after each prefix length
  JsonMatcher m_;
};

}  // namespace ml
