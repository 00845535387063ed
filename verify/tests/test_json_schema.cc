// The JSON-schema constraint engine (runtime/json_schema.h):
//   [json_schema]  schema compiler errors and the byte matcher on hand-written texts, keyword by keyword;
//   [json_walk]    random walks over the token masks of tok512.bin (llama2.c) and a byte-level MLTK
//                  vocabulary, for a table of schemas x 3 seeds; every walk must complete, every mask
//                  must equal the plain walk's; the outputs (and the byte edits of them that the
//                  matcher accepts) go to json_schema_walks.jsonl, which
//                  verify/json_schema_check.js validates with ajv (ctest json_schema.ajv);
//   [json_bench]   the time of one mask at a 151936-token synthetic byte-level vocabulary and tok512
//                  (and the tokenizer file named by ML_JSON_BENCH_TOKENIZER, when set).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/file_map.h"
#include "structured/json_schema.h"
#include "runtime/text/tokenizer.h"
#include "verify/tests/common.h"

namespace {

ml::JsonSchema compiled(const std::string &schema) {
  ml::JsonSchema s;
  std::string err;
  INFO("schema " << schema << " error: " << err);
  const ml_status st = ml::JsonSchema::compile(schema.data(), schema.size(), &s, &err);
  INFO("error: " << err);
  REQUIRE(st == ML_OK);
  return s;
}

std::string compile_error(const std::string &schema) {
  ml::JsonSchema s;
  std::string err;
  CHECK(ml::JsonSchema::compile(schema.data(), schema.size(), &s, &err) == ML_E_ARG);
  return err;
}

// 'c': accepted as a whole document; 'p': a valid prefix, not complete; 'x': rejected.
char verdict(const ml::JsonSchema &s, const std::string &text) {
  ml::JsonMatcher m;
  m.reset(s);
  if (!m.feed(text.data(), text.size())) return 'x';
  return m.complete() ? 'c' : 'p';
}

struct Case {
  const char *text;
  char want;
};

void expect(const std::string &schema, std::initializer_list<Case> cases) {
  const ml::JsonSchema s = compiled(schema);
  for (const Case &c : cases) {
    INFO("schema " << schema << "\ntext   " << c.text);
    CHECK(verdict(s, c.text) == c.want);
  }
}

}  // namespace

TEST_CASE("json schema: types, one by one and as a list", "[json_schema]") {
  expect(R"({"type":"null"})", {{"null", 'c'}, {"nul", 'p'}, {"nulls", 'x'}, {"0", 'x'}, {"\"\"", 'x'}});
  expect(R"({"type":"boolean"})", {{"true", 'c'}, {"false", 'c'}, {"tru", 'p'}, {"truex", 'x'}, {"null", 'x'}});
  expect(R"({"type":"integer"})", {{"0", 'c'}, {"-12", 'c'}, {"-", 'p'}, {"01", 'x'}, {"1.5", 'x'}, {"1e3", 'x'},
                                   {"123456789012345", 'c'}, {"1234567890123456", 'x'}, {" 1", 'x'}});
  expect(R"({"type":"number"})", {{"0", 'c'}, {"-0.5", 'c'}, {"1.", 'p'}, {"1.e2", 'x'}, {"2.5e-3", 'c'}, {"1E+99", 'c'},
                                  {"1e999", 'x'}, {"1e", 'p'}, {".5", 'x'}, {"+1", 'x'}, {"00", 'x'},
                                  {"12345678901234.5", 'c'}, {"123456789012345.", 'x'}});
  expect(R"({"type":"string"})", {{"\"\"", 'c'}, {"\"abc\"", 'c'}, {"\"ab", 'p'}, {"\"a\"b", 'x'}, {"abc", 'x'}});
  expect(R"({"type":["string","null"]})", {{"null", 'c'}, {"\"x\"", 'c'}, {"1", 'x'}, {"[]", 'x'}});
  expect(R"({"type":["integer","number"]})", {{"1.5", 'c'}, {"7", 'c'}});
  expect(R"({})", {{"{\"a\":[1, {\"b\":null}]}", 'c'}, {"\"s\"", 'c'}, {"-3e2", 'c'}, {"[true,false]", 'c'}});
  expect(R"(true)", {{"[]", 'c'}, {"{}", 'c'}});
}

TEST_CASE("json schema: whitespace is one space after ':' and ',' only", "[json_schema]") {
  expect(R"({"type":"object"})", {{"{\"a\": 1, \"b\":2}", 'c'}, {"{\"a\":  1}", 'x'}, {"{ \"a\":1}", 'x'},
                                  {"{\"a\" :1}", 'x'}, {"{\"a\":1 }", 'x'}, {"{\"a\":\n1}", 'x'}, {"{}", 'c'}, {"{} ", 'x'}});
  expect(R"({"type":"array"})", {{"[1, 2,3]", 'c'}, {"[ 1]", 'x'}, {"[1 ]", 'x'}, {"[1,  2]", 'x'}});
}

TEST_CASE("json schema: objects: properties, required, additionalProperties", "[json_schema]") {
  const char *closed = R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
                          "required":["name"],"additionalProperties":false})";
  expect(closed, {{"{\"name\":\"a\"}", 'c'}, {"{\"age\":3, \"name\":\"b\"}", 'c'}, {"{\"age\":3}", 'x'},
                  {"{}", 'x'}, {"{\"name\":\"a\",\"name\":\"b\"}", 'x'}, {"{\"nam\":1}", 'x'},
                  {"{\"name\":1}", 'x'}, {"{\"names\"", 'x'}, {"{\"other\":1}", 'x'}, {"{\"age\":1.5}", 'x'}});
  const char *open = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a","z"]})";
  expect(open, {{"{\"a\":1,\"z\":null}", 'c'}, {"{\"a\":1}", 'x'}, {"{\"z\":[],\"a\":2,\"other\":{\"x\":\"y\"}}", 'c'},
                {"{\"a\":\"s\",\"z\":1}", 'x'}, {"{\"ab\":\"s\",\"a\":1,\"z\":1}", 'c'}, {"{\"a\":1,\"a\":1,\"z\":1}", 'x'},
                {"{\"k\\n\":1", 'x'}});
  // after the only property of a closed object: no ',' (no key could follow)
  expect(R"({"properties":{"a":{"const":1}},"additionalProperties":false})",
         {{"{\"a\":1}", 'c'}, {"{\"a\":1,", 'x'}, {"{}", 'c'}});
  // an empty closed object: only {}
  expect(R"({"type":"object","additionalProperties":false})", {{"{}", 'c'}, {"{\"", 'x'}});
  // keys needing escapes are matched as written
  expect(R"({"properties":{"q\"k":{"type":"null"}},"required":["q\"k"],"additionalProperties":false})",
         {{"{\"q\\\"k\":null}", 'c'}, {"{\"qk\":null}", 'x'}});
  // extra keys: at most 64 code points
  expect(R"({"type":"object"})", {{("{\"" + std::string(64, 'k') + "\":1}").c_str(), 'c'},
                                  {("{\"" + std::string(65, 'k') + "\"").c_str(), 'x'}});
  expect(R"({"type":"json_object"})", {{"{\"x\":[1,{}]}", 'c'}, {"[]", 'x'}, {"\"s\"", 'x'}});
}

TEST_CASE("json schema: arrays: items, minItems, maxItems; nested arrays of objects", "[json_schema]") {
  expect(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
         {{"[]", 'x'}, {"[1]", 'c'}, {"[1,2,3]", 'c'}, {"[1,2,3,", 'x'}, {"[1,\"a\"]", 'x'}, {"[1,2", 'p'}});
  expect(R"({"type":"array","maxItems":0})", {{"[]", 'c'}, {"[1", 'x'}});
  const char *nested = R"({"type":"array","items":{"type":"array","minItems":1,"items":{"type":"object",
      "properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["id","tags"],
      "additionalProperties":false}}})";
  expect(nested, {{"[[{\"id\":1,\"tags\":[]}],[{\"tags\":[\"a\"],\"id\":2},{\"id\":3,\"tags\":[]}]]", 'c'},
                  {"[[]]", 'x'}, {"[[{\"id\":1}]]", 'x'}, {"[[{\"id\":1,\"tags\":[1]}]]", 'x'}, {"[]", 'c'}});
}

TEST_CASE("json schema: strings: UTF-8, escapes, surrogates, lengths in code points", "[json_schema]") {
  expect(R"({"type":"string"})",
         {{"\"h\xC3\xA9llo \xE6\x97\xA5\xF0\x9F\x99\x82\"", 'c'},  // é, 日, 🙂
          {"\"\xC3\"", 'x'},                                     // truncated sequence
          {"\"\xC0\x80\"", 'x'},                                 // overlong
          {"\"\xED\xA0\x80\"", 'x'},                             // UTF-8 encoded surrogate
          {"\"\xF4\x90\x80\x80\"", 'x'},                         // above U+10FFFF
          {"\"\xFF\"", 'x'},
          {"\"a\tb\"", 'x'},                                     // raw control byte
          {"\"\\n\\t\\\"\\\\\\/\\b\\f\\r\"", 'c'},
          {"\"\\x\"", 'x'},
          {"\"\\u00e9\\u0000\"", 'c'},
          {"\"\\ud83d\\ude42\"", 'c'},                          // a surrogate pair
          {"\"\\uD83D\"", 'x'},                                 // a lone high surrogate
          {"\"\\uDE42\"", 'x'},                                 // a lone low surrogate
          {"\"\\ud83d\\u0041\"", 'x'},                          // high + non-low
          {"\"\\u12G4\"", 'x'}});
  expect(R"({"type":"string","minLength":2,"maxLength":3})",
         {{"\"a\"", 'x'}, {"\"ab\"", 'c'}, {"\"abc\"", 'c'}, {"\"abcd", 'x'},
          {"\"\xE6\x97\xA5\xE6\x97\xA5\xE6\x97\xA5\"", 'c'},  // 3 code points, 9 bytes
          {"\"\xF0\x9F\x99\x82\xF0\x9F\x99\x82\"", 'c'},      // 2 code points
          {"\"\\ud83d\\ude42\\u0041\"", 'c'},                 // pair + escape = 2
          {"\"\\ud83d\\ude42\"", 'x'}});                      // 1 code point
}

TEST_CASE("json schema: enum and const of every JSON type", "[json_schema]") {
  expect(R"({"enum":["red","green",1,2.5,true,null,[1,2],{"a":"b"}]})",
         {{"\"red\"", 'c'}, {"\"gre", 'p'}, {"\"blue\"", 'x'}, {"1", 'c'}, {"2.5", 'c'}, {"2", 'p'}, {"true", 'c'},
          {"false", 'x'}, {"null", 'c'}, {"[1,2]", 'c'}, {"[1, 2]", 'x'}, {"{\"a\":\"b\"}", 'c'}});
  expect(R"({"enum":[1,12]})", {{"1", 'c'}, {"12", 'c'}, {"13", 'x'}});
  expect(R"({"type":"array","items":{"enum":[1,12]}})", {{"[1,12,1]", 'c'}});
  expect(R"({"const":"caf\u00e9"})", {{"\"caf\xC3\xA9\"", 'c'}, {"\"cafe\"", 'x'}});
  expect(R"({"const":{"k":[null,false]}})", {{"{\"k\":[null,false]}", 'c'}});
  // enum values the other keywords reject are dropped
  expect(R"({"type":"string","enum":["a",1,"bb"],"maxLength":1})", {{"\"a\"", 'c'}, {"1", 'x'}, {"\"bb\"", 'x'}});
  expect(R"({"enum":[1,2],"const":2})", {{"2", 'c'}, {"1", 'x'}});
  CHECK(compile_error(R"({"type":"string","enum":[1]})") ==
        "schema keyword \"enum\" at / has no value that the schema's other keywords accept");
}

TEST_CASE("json schema: anyOf of object vs array, and of overlapping alternatives", "[json_schema]") {
  const char *s = R"({"anyOf":[{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"],
                      "additionalProperties":false},{"type":"array","items":{"type":"string"}}]})";
  expect(s, {{"{\"k\":1}", 'c'}, {"[\"a\",\"b\"]", 'c'}, {"{}", 'x'}, {"[1]", 'x'}, {"\"s\"", 'x'}});
  expect(R"({"anyOf":[{"type":"string","maxLength":2},{"type":"string","minLength":4}]})",
         {{"\"ab\"", 'c'}, {"\"abc\"", 'x'}, {"\"abcd\"", 'c'}});
  expect(R"({"anyOf":[{"const":1},{"type":"integer"},{"anyOf":[{"type":"null"}]}]})",
         {{"1", 'c'}, {"123", 'c'}, {"null", 'c'}, {"true", 'x'}});
}

TEST_CASE("json schema: unsupported keywords are errors naming keyword and path", "[json_schema]") {
  CHECK(compile_error(R"({"properties":{"name":{"type":"string","pattern":"^a"}}})") ==
        "schema keyword \"pattern\" at /properties/name is not supported");
  CHECK(compile_error(R"({"oneOf":[{}]})") == "schema keyword \"oneOf\" at / is not supported");
  for (const char *kw : {"format", "allOf", "$ref", "minimum", "maximum", "multipleOf", "uniqueItems",
                         "patternProperties", "not", "if", "prefixItems", "minProperties"}) {
    const std::string schema = std::string(R"({"type":"array","items":{")") + kw + R"(":1}})";
    CHECK(compile_error(schema) == std::string("schema keyword \"") + kw + "\" at /items is not supported");
  }
  CHECK(compile_error(R"({"properties":{"a/b":{"anyOf":[{},{"format":"date"}]}}})") ==
        "schema keyword \"format\" at /properties/a~1b/anyOf/1 is not supported");
  CHECK(compile_error(R"({"additionalProperties":{"type":"string"}})") ==
        "schema keyword \"additionalProperties\" at / is supported only as true or false");
  CHECK(compile_error(R"({"type":"string","anyOf":[{}]})") == "schema keyword \"type\" at / beside anyOf is not supported");
  CHECK(compile_error(R"({"type":"strin"})") == "schema keyword \"type\" at / names an unknown type \"strin\"");
  CHECK(compile_error(R"({"maxLength":-1})") == "schema keyword \"maxLength\" at / must be a non-negative integer up to 1e9");
  CHECK(compile_error(R"({"minItems":3,"maxItems":2})") == "schema keyword \"minItems\" at / is above maxItems");
  CHECK(compile_error(R"({"required":["x"],"additionalProperties":false})") ==
        "schema keyword \"required\" at / names \"x\", which is not in properties while additionalProperties is false");
  CHECK(compile_error(R"({"items":{"type":"json_object"}})") ==
        "schema keyword \"type\" at /items \"json_object\" is accepted only as the whole schema");
  CHECK(compile_error(R"({"items":false})") == "schema false at /items is not supported (it matches nothing)");
  // annotations are accepted and ignored
  expect(R"({"title":"t","description":"d","$schema":"x","$id":"y","$comment":"c","default":1,"examples":[1],
             "type":"integer"})", {{"5", 'c'}});
}

TEST_CASE("json schema: malformed schema JSON is an error with the byte offset", "[json_schema]") {
  // nlohmann-json's reason, without the text it last read (which may be invalid UTF-8), and where
  CHECK(compile_error(R"({"type":"string",})") == "schema JSON: unexpected '}'; expected string literal near byte 17");
  CHECK(compile_error(R"({"type" "string"})") == "schema JSON: unexpected string literal; expected ':' near byte 15");
  CHECK(compile_error(R"({"type":"string"} x)") == "schema JSON: invalid literal; expected end of input near byte 18");
  CHECK(compile_error("") == "schema JSON: unexpected end of input; expected '[', '{', or a literal near byte 0");
  CHECK_THAT(compile_error(R"({"enum":["\ud800"]})"),
             Catch::StartsWith("schema JSON: invalid string: surrogate U+D800..U+DBFF must be followed by"));
  CHECK(compile_error("{\"const\":\"\xC3\"}") == "schema JSON: invalid string: ill-formed UTF-8 byte near byte 11");
  CHECK(compile_error(std::string(40, '[') + std::string(40, ']')) == "schema JSON: nesting deeper than 32");
  CHECK(compile_error(R"({"type":tru})") == "schema JSON: invalid literal near byte 11");
}

// ---- Token level.

namespace {

struct Vocab {
  ml::TokenBytes bytes;
  std::string name;
  ml::JsonVocab jv;
  double init_ms = 0;
  void prepare() {
    std::string err;
    const auto t0 = std::chrono::steady_clock::now();
    INFO(name << ": " << err);
    REQUIRE(jv.init(bytes, &err) == ML_OK);
    init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
};

Vocab load_vocab(const std::string &path, int vocab, const char *name) {
  ml::FileMap file;
  REQUIRE(file.open(path.c_str(), "tokenizer") == ML_OK);
  ml::Tokenizer tok;
  REQUIRE(tok.load(file.data(), file.size(), vocab, path.c_str()) == ML_OK);
  Vocab v;
  REQUIRE(ml::token_bytes_of(tok, &v.bytes) == ML_OK);
  v.name = name;
  v.prepare();
  return v;
}

// A vocabulary shaped like GPT-2/Qwen's: the 256 bytes, words with and without a leading space,
// digits, JSON punctuation runs, CJK and emoji, and cut UTF-8 sequences; n entries.
ml::TokenBytes synthetic_vocab(size_t n) {
  ml::TokenBytes v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, char(b));
  std::mt19937 rng(1234);
  auto pick = [&](const char *set) { return set[rng() % strlen(set)]; };
  const char *punct[] = {"\"", "\":", "\",", "{\"", "}", "},", "[", "]", "\"}", "\":\"", ", \"", ": ", "\\n", "\\\"", "\"]"};
  while (v.size() < n) {
    const unsigned r = rng() % 100;
    std::string t;
    if (r < 60) {
      if (rng() % 2) t.push_back(' ');
      const size_t len = 2 + rng() % 8;
      for (size_t i = 0; i < len; ++i) t.push_back(pick("abcdefghijklmnopqrstuvwxyzeeeaaiioonnsstt"));
      if (rng() % 5 == 0) t[t[0] == ' ' ? 1 : 0] = char(t[t[0] == ' ' ? 1 : 0] - 32);
    } else if (r < 68) {
      const size_t len = 1 + rng() % 3;
      for (size_t i = 0; i < len; ++i) t.push_back(pick("0123456789"));
    } else if (r < 78) {
      t = punct[rng() % (sizeof punct / sizeof *punct)];
      if (rng() % 2) t += pick("abcdefghij");
    } else if (r < 93) {
      const size_t len = 1 + rng() % 3;  // CJK: E4..E9 + 2 continuation bytes
      for (size_t i = 0; i < len; ++i) {
        t.push_back(char(0xE4 + rng() % 6)), t.push_back(char(0x80 + rng() % 64)), t.push_back(char(0x80 + rng() % 64));
      }
    } else {
      // a cut or joined sequence: lead bytes and continuation bytes in odd places
      t.push_back(char(0xE4 + rng() % 6));
      if (rng() % 2) t.push_back(char(0x80 + rng() % 64));
      if (rng() % 3 == 0) t.push_back('"');
    }
    v.push_back(t);
  }
  return v;
}

// The schema table of the random walks (the subset, each keyword in several places).
const char *const kWalkSchemas[] = {
    R"({"type":"null"})",
    R"({"type":"boolean"})",
    R"({"type":"integer"})",
    R"({"type":"number"})",
    R"({"type":"string","maxLength":12})",
    R"({"type":"string","minLength":3,"maxLength":6})",
    R"({"type":["string","integer","null"],"maxLength":8})",
    R"({"enum":["red","green","blue",1,2.5,null,true,[1,"x"],{"k":"v"}]})",
    R"({"const":{"name":"x","tags":["a","b"]}})",
    R"({"type":"array","items":{"type":"integer"},"maxItems":5})",
    R"({"type":"array","items":{"type":"number"},"minItems":2,"maxItems":4})",
    R"({"type":"array","items":{"type":"string","maxLength":5},"minItems":1,"maxItems":3})",
    R"({"type":"array","items":{"type":"boolean"},"minItems":3,"maxItems":3})",
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":10}},"required":["name"],"additionalProperties":false})",
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},"age":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","age","ok"],"additionalProperties":false})",
    R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"number"},"c":{"type":"null"}},"additionalProperties":false})",
    R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"maxLength":4})",
    R"({"type":"object","properties":{"color":{"enum":["red","green","blue"]},"size":{"enum":[1,2,3]}},"required":["color","size"],"additionalProperties":false})",
    R"({"type":"object","properties":{"kind":{"const":"point"},"xy":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}},"required":["kind","xy"],"additionalProperties":false})",
    R"({"type":"array","maxItems":3,"items":{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","maxItems":2,"items":{"type":"string","maxLength":4}}},"required":["id","tags"],"additionalProperties":false}})",
    R"({"type":"object","properties":{"user":{"type":"object","properties":{"first":{"type":"string","maxLength":6},"last":{"type":"string","maxLength":6}},"required":["first","last"],"additionalProperties":false},"admin":{"type":"boolean"}},"required":["user"],"additionalProperties":false})",
    R"({"anyOf":[{"type":"object","properties":{"k":{"type":"integer"}},"required":["k"],"additionalProperties":false},{"type":"array","items":{"type":"string","maxLength":3},"maxItems":3}]})",
    R"({"anyOf":[{"type":"string","maxLength":4},{"type":"integer"},{"type":"null"}]})",
    R"({"anyOf":[{"const":"yes"},{"const":"no"},{"type":"object","properties":{"maybe":{"type":"number"}},"required":["maybe"],"additionalProperties":false}]})",
    R"({"type":"array","maxItems":4,"items":{"anyOf":[{"type":"integer"},{"type":"string","maxLength":3}]}})",
    R"({"type":"object","properties":{"value":{"anyOf":[{"type":"number"},{"type":"array","items":{"type":"number"},"maxItems":3}]}},"required":["value"],"additionalProperties":false})",
    R"({"type":"json_object"})",
    R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]})",
    R"({"type":"array","maxItems":3,"items":{"type":"array","maxItems":3,"items":{"type":"array","maxItems":2,"items":{"type":"integer"}}}})",
    R"({"type":"object","properties":{"title":{"type":"string","minLength":1,"maxLength":8,"description":"a title"},"year":{"type":"integer"},"genres":{"type":"array","items":{"enum":["drama","comedy","sci-fi"]},"minItems":1,"maxItems":2}},"required":["title","year","genres"],"additionalProperties":false,"title":"movie"})",
    R"({"type":"object","properties":{"q\"k":{"type":"string","maxLength":3},"caf\u00e9":{"type":"integer"}},"required":["q\"k","caf\u00e9"],"additionalProperties":false})",
    R"({"type":"string","minLength":2,"maxLength":2})",
    R"({"anyOf":[{"type":"string","maxLength":3},{"type":"string","minLength":5,"maxLength":8}]})",
    R"({"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"s":{"type":"string","maxLength":4}},"required":["s"]},{"type":"object","properties":{"s":{"type":"string","minLength":6,"maxLength":9}},"additionalProperties":false}]}},"required":["v"],"additionalProperties":false})",
    R"({"type":"array","items":{"type":["integer","null","boolean"]},"minItems":1,"maxItems":6})",
    R"({"type":"object","additionalProperties":false,"properties":{"deep":{"type":"object","additionalProperties":false,"properties":{"deeper":{"type":"object","additionalProperties":false,"properties":{"v":{"type":"string","maxLength":5}},"required":["v"]}},"required":["deeper"]}},"required":["deep"]})",
};

void json_string(const std::string &s, std::string *out) {
  static const char hexd[] = "0123456789abcdef";
  out->push_back('"');
  for (const char ch : s) {
    const uint8_t c = uint8_t(ch);
    if (c == '"' || c == '\\') out->push_back('\\'), out->push_back(char(c));
    else if (c < 0x20) *out += std::string("\\u00") + hexd[c >> 4] + hexd[c & 15];
    else out->push_back(char(c));
  }
  out->push_back('"');
}

// A walk: uniform over the allowed tokens for kSteerAfter steps; then uniform over the allowed
// tokens that lower min_remaining() (the fewest bytes that complete the document: a single byte
// of a shortest completion always does, so the walk must end). Stops when complete: then with
// probability 1/3 per step, at once after kSteerAfter steps or when finished.
constexpr int kSteerAfter = 48, kMaxSteps = 600;

bool random_walk(ml::JsonConstraint &c, const ml::TokenBytes &bytes, uint32_t seed, std::string *out, int *steps,
                 int *mask_mismatches) {
  std::mt19937 rng(seed);
  c.reset();
  out->clear();
  std::vector<uint8_t> mask, mask2;
  std::vector<int> ok, closer;
  for (*steps = 0; *steps < kMaxSteps; ++*steps) {
    if (c.complete() && (c.finished() || *steps >= kSteerAfter || rng() % 3 == 0)) return true;
    c.allowed(&mask);
    c.allowed_walk_only(&mask2);
    if (mask != mask2) ++*mask_mismatches;
    ok.clear(), closer.clear();
    const uint64_t now = c.min_remaining();
    for (size_t i = 0; i < mask.size(); ++i) {
      if (!mask[i]) continue;
      ok.push_back(int(i));
      if (*steps < kSteerAfter) continue;
      ml::JsonMatcher m = c.matcher();
      if (m.feed(bytes[i].data(), bytes[i].size()) && m.min_remaining() < now) closer.push_back(int(i));
    }
    if (ok.empty()) return false;  // stuck: the engine must never get here
    if (*steps >= kSteerAfter && closer.empty()) return false;  // min_remaining() is not exact
    const std::vector<int> &from = *steps >= kSteerAfter ? closer : ok;
    const int t = from[rng() % from.size()];
    if (!c.accept(t)) return false;
    *out += bytes[size_t(t)];
  }
  return c.complete();
}

}  // namespace

TEST_CASE("json schema: byte edits of schemas compile or fail with a message; texts never crash", "[json_schema]") {
  // hostile input: every edited schema is either compiled (then matched against random bytes and
  // its own text) or refused with ML_E_ARG and a non-empty message
  static const char kAlphabet[] = "{}[]\",: 0123456789-eE\\tfnu\x80\xC3";
  std::mt19937 rng(99);
  int compiled_ok = 0, refused = 0;
  for (const char *base : kWalkSchemas) {
    for (int k = 0; k < 40; ++k) {
      std::string schema = base;
      for (int e = 0, ne = 1 + int(rng() % 3); e < ne && !schema.empty(); ++e) {
        const size_t at = rng() % schema.size();
        const char ch = kAlphabet[rng() % (sizeof kAlphabet - 1)];
        if (rng() % 2) schema.erase(at, 1);
        else schema.insert(schema.begin() + long(at), ch);
      }
      ml::JsonSchema s;
      std::string err;
      const ml_status st = ml::JsonSchema::compile(schema.data(), schema.size(), &s, &err);
      if (st != ML_OK) {
        INFO(schema);
        CHECK(st == ML_E_ARG);
        CHECK(!err.empty());
        ++refused;
        continue;
      }
      ++compiled_ok;
      ml::JsonMatcher m;
      m.reset(s);
      for (int b = 0; b < 64; ++b) {
        const char ch = char(rng() % 4 ? kAlphabet[rng() % (sizeof kAlphabet - 1)] : char(rng()));
        m.feed(&ch, 1);  // refusals leave the state as it was
        (void)m.min_remaining();
      }
      m.reset(s);
      m.feed(schema.data(), schema.size());
    }
  }
  CHECK(compiled_ok > 10);
  CHECK(refused > 100);
}

TEST_CASE("json constraint: setup checks the vocabulary can spell every JSON byte", "[json_schema]") {
  const ml::JsonSchema s = compiled(R"({"type":"string"})");
  ml::TokenBytes v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, char(b));
  v.push_back("ab");
  ml::JsonVocab jv;
  std::string err;
  CHECK(jv.init(v, &err) == ML_OK);
  v['"'] = "\"\"";  // no single-byte token for the quote
  CHECK(jv.init(v, &err) == ML_E_ARG);
  CHECK(err.find("no single-byte token for byte 0x22") != std::string::npos);
  ml::JsonConstraint c;
  CHECK(c.init(ml::JsonSchema(), jv) == ML_E_ARG);  // a schema that was never compiled
}

TEST_CASE("json constraint: masks, accept and completion on a small vocabulary", "[json_schema]") {
  const ml::JsonSchema s = compiled(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false})");
  ml::TokenBytes v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, char(b));
  v.push_back("{\"n\":");   // 256
  v.push_back("{\"m\":");   // 257
  v.push_back("12}");       // 258
  v.push_back("");          // 259: EOS-like, never allowed
  v.push_back("1}x");       // 260: runs past the end
  ml::JsonVocab jv;
  std::string err;
  REQUIRE(jv.init(v, &err) == ML_OK);
  ml::JsonConstraint c;
  REQUIRE(c.init(s, jv) == ML_OK);
  std::vector<uint8_t> m;
  c.allowed(&m);
  CHECK(m['{'] == 1);
  CHECK(m[256] == 1);
  CHECK(m[257] == 0);
  CHECK(std::count(m.begin(), m.end(), 1) == 2);
  CHECK(!c.accept(257));
  REQUIRE(c.accept(256));
  c.allowed(&m);
  CHECK(m[258] == 1);
  CHECK(m[260] == 0);
  CHECK(m[259] == 0);
  CHECK(m['}'] == 0);
  CHECK(m[' '] == 1);
  REQUIRE(c.accept(258));
  CHECK(c.complete());
  CHECK(c.finished());
  c.allowed(&m);
  CHECK(std::count(m.begin(), m.end(), 1) == 0);
}

TEST_CASE("json constraint: random walks complete and validate (tok512 and byte-level BPE)", "[json_walk]") {
  std::vector<Vocab> vocabs;
  vocabs.push_back(load_vocab(test::shared("models/stories260K/tok512.bin"), 512, "tok512"));
  vocabs.push_back(load_vocab(test::env_path("ML_SOURCE", "fuzz/data/encode_tokenizer.mltk"), 0, "mltk"));
  std::ofstream out("json_schema_walks.jsonl", std::ios::binary);
  REQUIRE(out.good());
  int walks = 0, mismatches = 0, total_steps = 0, mutants = 0;
  for (const Vocab &v : vocabs) {
    for (const char *schema_text : kWalkSchemas) {
      const ml::JsonSchema s = compiled(schema_text);
      ml::JsonConstraint c;
      INFO("vocabulary " << v.name << " schema " << schema_text);
      REQUIRE(c.init(s, v.jv) == ML_OK);
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        std::string text;
        int steps = 0;
        const bool ok = random_walk(c, v.bytes, seed * 7919u + uint32_t(walks), &text, &steps, &mismatches);
        INFO("seed " << seed << " after " << steps << " tokens: " << text);
        CHECK(ok);
        CHECK(verdict(s, text) == 'c');  // the byte matcher agrees on the whole text
        std::string line = "{\"vocab\":\"" + v.name + "\",\"seed\":" + std::to_string(seed) + ",\"schema\":" + schema_text + ",\"output\":";
        json_string(text, &line);
        out << line << ",\"complete\":" << (ok ? "true" : "false") << "}\n";
        ++walks, total_steps += steps;
        // Soundness beyond the walks: byte edits of the output that the matcher accepts as a whole
        // document go to ajv too (the matcher may refuse valid JSON, never accept invalid JSON).
        static const char kAlphabet[] = "{}[]\",: 0123456789.-+eE\\tfnrulsax\xC3\xA9\xF0";
        std::mt19937 mrng(seed * 31u + uint32_t(walks));
        for (int k = 0; k < 24 && !text.empty(); ++k) {
          std::string mut = text;
          const size_t at = mrng() % mut.size();
          const char ch = kAlphabet[mrng() % (sizeof kAlphabet - 1)];
          switch (mrng() % 3) {
            case 0: mut.erase(at, 1); break;
            case 1: mut.insert(mut.begin() + long(at), ch); break;
            default: mut[at] = ch; break;
          }
          if (mut == text || verdict(s, mut) != 'c') continue;
          std::string mline = "{\"vocab\":\"" + v.name + "\",\"seed\":" + std::to_string(seed) + ",\"schema\":" + schema_text +
                              ",\"mutant\":true,\"output\":";
          json_string(mut, &mline);
          out << mline << ",\"complete\":true}\n";
          ++mutants;
        }
      }
    }
  }
  CHECK(mismatches == 0);  // the in-string shortcut gives the plain walk's mask
  CHECK(walks == 2 * 3 * int(sizeof kWalkSchemas / sizeof *kWalkSchemas));
  CHECK(sizeof kWalkSchemas / sizeof *kWalkSchemas >= 30);
  CHECK(mutants > 100);
  std::printf("json walks: %d walks, %d tokens, %d accepted byte edits, written to json_schema_walks.jsonl\n", walks,
              total_steps, mutants);
}

TEST_CASE("json constraint: mask time at 151936 tokens (synthetic byte-level) and tok512", "[json_bench]") {
  const char *schema_text = R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"type":"string","maxLength":8}}},"required":["name","age","tags"],"additionalProperties":false})";
  const ml::JsonSchema s = compiled(schema_text);
  const ml::JsonSchema any = compiled(R"({"type":"json_object"})");
  const ml::JsonSchema alts = compiled(R"({"anyOf":[{"type":"object","properties":{"s":{"type":"string"}}},
      {"type":"object","properties":{"s":{"type":"string","maxLength":9},"t":{"type":"integer"}},"required":["t"]}]})");
  struct Point {
    const ml::JsonSchema *schema;
    const char *name, *prefix;
  };
  const Point points[] = {
      {&s, "start (before '{')", ""},
      {&s, "key start (after '{')", "{"},
      {&s, "in a string value", "{\"name\":\"Ab"},
      {&s, "after a key's ':'", "{\"name\":\"Ab\",\"age\":"},
      {&s, "in a number", "{\"name\":\"Ab\",\"age\":12"},
      {&s, "in a maxLength string", "{\"name\":\"Ab\",\"age\":12,\"tags\":[\"ab"},
      {&any, "json_object: in a free key", "{\"ke"},
      {&any, "json_object: in a free value string", "{\"key\":\"te"},
      {&alts, "anyOf: a string in 2 alternatives", "{\"s\":\"te"},
  };
  std::vector<Vocab> vocabs;
  vocabs.emplace_back();
  vocabs.back().bytes = synthetic_vocab(151936);
  vocabs.back().name = "synthetic-151936";
  vocabs.back().prepare();
  vocabs.push_back(load_vocab(test::shared("models/stories260K/tok512.bin"), 512, "tok512"));
  // a real vocabulary on request, e.g. the converted Qwen3 one of tokenizer.oracle's cache
  if (const char *extra = std::getenv("ML_JSON_BENCH_TOKENIZER")) vocabs.push_back(load_vocab(extra, 0, "env-tokenizer"));
  for (const Vocab &v : vocabs) {
    std::printf("json vocabulary %-16s JsonVocab::init %.1f ms (once per tokenizer)\n", v.name.c_str(), v.init_ms);
    for (const Point &p : points) {
      ml::JsonConstraint c;
      REQUIRE(c.init(*p.schema, v.jv) == ML_OK);
      REQUIRE(c.feed(p.prefix, strlen(p.prefix)));
      std::vector<uint8_t> mask;
      std::vector<double> us;
      for (int rep = 0; rep < 7; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        c.allowed(&mask);
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(us.begin(), us.end());
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<uint8_t> plain;
      c.allowed_walk_only(&plain);
      const double walk_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      CHECK(plain == mask);
      std::printf("json mask %-16s %-34s median %8.1f us (min %8.1f)  %6ld allowed  (walk without shortcut %8.1f us)\n",
                  v.name.c_str(), p.name, us[us.size() / 2], us[0], long(std::count(mask.begin(), mask.end(), 1)), walk_us);
      CHECK(std::count(mask.begin(), mask.end(), 1) > 0);
    }
  }
}
