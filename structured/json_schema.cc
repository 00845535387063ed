// JSON-schema constraint engine: the schema (parsed by nlohmann-json) compiled, byte matcher, token
// masks (the contract is in structured/json_schema.h; the subset in docs/json-schema.md).
#include "structured/json_schema.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/text/tokenizer.h"

namespace ml {

namespace {

// ---- The schema text as a tree (JVal: what the compiler walks).

struct JVal {
  enum T { kNull, kBool, kNum, kStr, kArr, kObj } t = kNull;
  bool b = false;
  std::string s;  // string value (UTF-8) or number text
  std::vector<JVal> a;
  std::vector<std::pair<std::string, JVal>> o;
};

constexpr int kMaxSchemaDepth = 32;

// The schema text as a JVal tree, built from nlohmann-json's SAX events (no exception is thrown:
// the WebAssembly builds compile without them). Numbers keep their text as written; nesting past
// kMaxSchemaDepth stops the parse.
class SchemaSax : public nlohmann::json_sax<nlohmann::json> {
  using json = nlohmann::json;

 public:
  JVal root;
  std::string err;  // set when the parse stops

  bool null() override { return put(JVal()) != nullptr; }
  bool boolean(bool b) override {
    JVal v;
    v.t = JVal::kBool, v.b = b;
    return put(std::move(v)) != nullptr;
  }
  bool number_integer(json::number_integer_t x) override { return number(std::to_string(x)); }
  bool number_unsigned(json::number_unsigned_t x) override { return number(std::to_string(x)); }
  bool number_float(json::number_float_t, const json::string_t &text) override { return number(text); }
  bool string(json::string_t &x) override {
    JVal v;
    v.t = JVal::kStr, v.s = x;
    return put(std::move(v)) != nullptr;
  }
  bool binary(json::binary_t &) override { return false; }  // not produced by the JSON parser
  bool start_object(std::size_t) override { return open(JVal::kObj); }
  bool key(json::string_t &k) override { return key_ = k, true; }
  bool end_object() override { return stack_.pop_back(), true; }
  bool start_array(std::size_t) override { return open(JVal::kArr); }
  bool end_array() override { return stack_.pop_back(), true; }
  // nlohmann's message: "... parse error at line L, column C: syntax error while parsing X - REASON;
  // last read: '...'; expected Y": REASON and Y kept ("last read" may quote invalid UTF-8).
  bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &ex) override {
    std::string what = ex.what(), why = "syntax error";
    const size_t dash = what.find(" - ");
    if (dash != std::string::npos) {
      why = what.substr(dash + 3);
      const size_t last = why.find("; last read: ");
      if (last != std::string::npos) {
        const size_t expected = why.find("; expected ", last);
        why = why.substr(0, last) + (expected == std::string::npos ? "" : why.substr(expected));
      }
    }
    char at[48];
    std::snprintf(at, sizeof at, " near byte %zu", position > 0 ? position - 1 : size_t(0));
    err = "schema JSON: " + why + at;
    return false;
  }

 private:
  JVal *put(JVal v) {
    if (stack_.empty()) return &(root = std::move(v));
    JVal *top = stack_.back();  // only the innermost open container grows: the stack's pointers stay valid
    if (top->t == JVal::kArr) return top->a.push_back(std::move(v)), &top->a.back();
    top->o.emplace_back(key_, std::move(v));
    return &top->o.back().second;
  }
  bool number(const std::string &text) {
    JVal v;
    v.t = JVal::kNum, v.s = text;
    return put(std::move(v)) != nullptr;
  }
  bool open(JVal::T t) {
    if (stack_.size() >= size_t(kMaxSchemaDepth)) return err = "schema JSON: nesting deeper than 32", false;
    JVal v;
    v.t = t;
    stack_.push_back(put(std::move(v)));
    return true;
  }
  std::vector<JVal *> stack_;
  std::string key_;
};

bool parse_schema(const char *p, size_t n, JVal *v, std::string *err) {
  SchemaSax sax;
  if (!nlohmann::json::sax_parse(p, p + n, &sax)) {
    *err = sax.err.empty() ? "schema JSON: syntax error" : sax.err;
    return false;
  }
  *v = std::move(sax.root);
  return true;
}

// Compact serialization: the bytes an enum/const value must be generated as.
void escape_to(const std::string &s, std::string *out) {
  for (const char ch : s) {
    const uint8_t c = uint8_t(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\'), out->push_back(char(c));
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      *out += buf;
    } else {
      out->push_back(char(c));
    }
  }
}

void serialize(const JVal &v, std::string *out) {
  switch (v.t) {
    case JVal::kNull: *out += "null"; break;
    case JVal::kBool: *out += v.b ? "true" : "false"; break;
    case JVal::kNum: *out += v.s; break;
    case JVal::kStr: out->push_back('"'), escape_to(v.s, out), out->push_back('"'); break;
    case JVal::kArr:
      out->push_back('[');
      for (size_t i = 0; i < v.a.size(); ++i) {
        if (i) out->push_back(',');
        serialize(v.a[i], out);
      }
      out->push_back(']');
      break;
    case JVal::kObj:
      out->push_back('{');
      for (size_t i = 0; i < v.o.size(); ++i) {
        if (i) out->push_back(',');
        out->push_back('"'), escape_to(v.o[i].first, out), out->push_back('"'), out->push_back(':');
        serialize(v.o[i].second, out);
      }
      out->push_back('}');
      break;
  }
}

std::string pointer_token(const std::string &k) {
  std::string r;
  for (const char c : k) {
    if (c == '~') r += "~0";
    else if (c == '/') r += "~1";
    else r.push_back(c);
  }
  return r;
}

std::string show(const std::string &path) { return path.empty() ? "/" : path; }

}  // namespace

// ---- Schema compiler.

class SchemaCompiler {
 public:
  SchemaCompiler(JsonSchema *out, std::string *err) : s_(out), err_(err) {}

  bool error(const std::string &m) { *err_ = m; return false; }
  bool kw_error(const std::string &kw, const std::string &path, const std::string &what) {
    return error("schema keyword \"" + kw + "\" at " + show(path) + " " + what);
  }

  static bool count_value(const JVal &v, uint32_t *out) {
    if (v.t != JVal::kNum || v.s.empty() || v.s[0] == '-') return false;
    // integers, also spelled 2.0 or 1e1 (JSON Schema compares values)
    const double d = strtod(v.s.c_str(), nullptr);
    if (!(d >= 0 && d <= 1e9) || d != double(uint64_t(d))) return false;
    *out = uint32_t(d);
    return true;
  }

  bool compile(const JVal &v, const std::string &path, bool root, int *node) {
    if (v.t == JVal::kBool) {
      if (!v.b) return error("schema false at " + show(path) + " is not supported (it matches nothing)");
      *node = 0;
      return true;
    }
    if (v.t != JVal::kObj) return error("schema at " + show(path) + " must be an object or true");
    JsonSchema::Node n;
    const JVal *enum_v = nullptr, *const_v = nullptr, *any_of = nullptr;
    std::string validation_kw;  // one validation keyword other than anyOf (anyOf must stand alone)
    for (const auto &kv : v.o) {
      const std::string &k = kv.first;
      const JVal &x = kv.second;
      static const char *const kAnnotations[] = {"title", "description", "$schema", "$id", "$comment", "default",
                                                 "examples", "deprecated", "readOnly", "writeOnly"};
      bool annotation = false;
      for (const char *a : kAnnotations) annotation = annotation || k == a;
      if (annotation) continue;
      if (k != "anyOf") validation_kw = k;
      if (k == "type") {
        std::vector<const JVal *> names;
        if (x.t == JVal::kStr) names.push_back(&x);
        else if (x.t == JVal::kArr && !x.a.empty()) for (const JVal &e : x.a) names.push_back(&e);
        else return kw_error(k, path, "must be a type name or a non-empty list of them");
        n.types = 0;
        for (const JVal *e : names) {
          if (e->t != JVal::kStr) return kw_error(k, path, "must be a type name or a non-empty list of them");
          static const char *const kNames[] = {"object", "array", "string", "number", "integer", "boolean", "null"};
          uint8_t bit = 0;
          for (int i = 0; i < 7; ++i) if (e->s == kNames[i]) bit = uint8_t(1u << i);
          if (e->s == "json_object") {
            if (!root || v.o.size() != 1) return kw_error(k, path, "\"json_object\" is accepted only as the whole schema");
            bit = JsonSchema::kObj;
          }
          if (!bit) return kw_error(k, path, "names an unknown type \"" + e->s + "\"");
          n.types |= bit;
        }
      } else if (k == "properties") {
        if (x.t != JVal::kObj) return kw_error(k, path, "must be an object");
        for (const auto &p : x.o) {
          int child;
          if (!compile(p.second, path + "/properties/" + pointer_token(p.first), false, &child)) return false;
          JsonSchema::Prop prop;
          escape_to(p.first, &prop.key);
          prop.node = child;
          prop.required = false;
          bool dup = false;
          for (auto &q : n.props) if (q.key == prop.key) q.node = child, dup = true;  // the last one counts
          if (!dup) n.props.push_back(prop);
        }
      } else if (k == "required") {
        if (x.t != JVal::kArr) return kw_error(k, path, "must be a list of strings");
        for (const JVal &e : x.a) if (e.t != JVal::kStr) return kw_error(k, path, "must be a list of strings");
      } else if (k == "additionalProperties") {
        if (x.t != JVal::kBool) return kw_error(k, path, "is supported only as true or false");
        n.additional = x.b;
      } else if (k == "items") {
        if (x.t == JVal::kArr) return kw_error(k, path, "as a list (tuple validation) is not supported");
        if (!compile(x, path + "/items", false, &n.items)) return false;
      } else if (k == "minItems" || k == "maxItems" || k == "minLength" || k == "maxLength") {
        uint32_t c;
        if (!count_value(x, &c)) return kw_error(k, path, "must be a non-negative integer up to 1e9");
        (k == "minItems" ? n.min_items : k == "maxItems" ? n.max_items : k == "minLength" ? n.min_len : n.max_len) = c;
      } else if (k == "enum") {
        if (x.t != JVal::kArr || x.a.empty()) return kw_error(k, path, "must be a non-empty list");
        enum_v = &x;
      } else if (k == "const") {
        const_v = &x;
      } else if (k == "anyOf") {
        if (x.t != JVal::kArr || x.a.empty()) return kw_error(k, path, "must be a non-empty list of schemas");
        any_of = &x;
      } else {
        return kw_error(k, path, "is not supported");
      }
    }
    // required: after properties, whatever the keyword order
    for (const auto &kv : v.o) {
      if (kv.first != "required") continue;
      for (const JVal &e : kv.second.a) {
        std::string key;
        escape_to(e.s, &key);
        auto it = std::find_if(n.props.begin(), n.props.end(), [&](const JsonSchema::Prop &p) { return p.key == key; });
        if (it == n.props.end()) {
          if (!n.additional)
            return kw_error("required", path, "names \"" + e.s + "\", which is not in properties while additionalProperties is false");
          n.props.push_back({key, 0, true});  // any value
        } else {
          it->required = true;
        }
      }
    }
    if (any_of) {
      if (!validation_kw.empty()) return kw_error(validation_kw, path, "beside anyOf is not supported");
      for (size_t i = 0; i < any_of->a.size(); ++i) {
        int alt;
        if (!compile(any_of->a[i], path + "/anyOf/" + std::to_string(i), false, &alt)) return false;
        n.any_of.push_back(alt);
      }
    }
    if (n.props.size() > 64) return kw_error("properties", path, "has more than 64 keys");
    std::sort(n.props.begin(), n.props.end(), [](const JsonSchema::Prop &a, const JsonSchema::Prop &b) { return a.key < b.key; });
    for (size_t i = 0; i < n.props.size(); ++i) if (n.props[i].required) n.required_mask |= uint64_t(1) << i;
    if (n.min_items > n.max_items) return kw_error("minItems", path, "is above maxItems");
    if (n.min_len > n.max_len) return kw_error("minLength", path, "is above maxLength");
    if (n.types == 0) return kw_error("type", path, "allows no type");
    *node = int(s_->nodes_.size());
    s_->nodes_.push_back(n);
    if (enum_v || const_v) return literals(enum_v, const_v, path, *node);
    return true;
  }

  // enum/const: the compact serializations that the rest of the schema object accepts.
  bool literals(const JVal *enum_v, const JVal *const_v, const std::string &path, int node) {
    std::vector<std::string> cand;
    if (enum_v) {
      for (const JVal &e : enum_v->a) cand.emplace_back(), serialize(e, &cand.back());
    }
    if (const_v) {
      std::string c;
      serialize(*const_v, &c);
      if (enum_v) {
        const bool in = std::find(cand.begin(), cand.end(), c) != cand.end();
        cand.clear();
        if (in) cand.push_back(c);
      } else {
        cand.push_back(c);
      }
    }
    std::vector<std::string> keep;
    for (const std::string &c : cand) {
      JsonState st;
      st.starts.push_back(0);
      JsonFrame f{};
      f.node = node;
      st.frames.push_back(f);
      JsonState a = st, b;
      bool ok = true;
      for (const char ch : c) {
        JsonMatcher::step(*s_, a, uint8_t(ch), &b);
        if (b.starts.empty()) { ok = false; break; }
        std::swap(a, b);
      }
      if (ok && JsonMatcher::complete(*s_, a)) keep.push_back(c);
    }
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    if (keep.empty())
      return kw_error(enum_v ? "enum" : "const", path, "has no value that the schema's other keywords accept");
    JsonSchema::Node &n = s_->nodes_[size_t(node)];
    n.lit_lo = int(s_->literals_.size());
    for (auto &k : keep) s_->literals_.push_back(k);
    n.lit_hi = int(s_->literals_.size());
    return true;
  }

 private:
  JsonSchema *s_;
  std::string *err_;
};

ml_status JsonSchema::compile(const char *schema_json, size_t n, JsonSchema *out, std::string *err) {
  std::string local;
  if (!err) err = &local;
  if (!out || (!schema_json && n)) {
    *err = "JsonSchema::compile: null argument";
    return fail(ML_E_ARG, "%s", err->c_str());
  }
  *out = JsonSchema();
  JVal v;
  if (!parse_schema(schema_json ? schema_json : "", n, &v, err)) return fail(ML_E_ARG, "%s", err->c_str());
  out->literals_ = {"false", "true", "null"};
  out->nodes_.emplace_back();  // node 0: any value
  out->nodes_[0].items = 0;
  SchemaCompiler c(out, err);
  if (!c.compile(v, "", true, &out->root_)) {
    *out = JsonSchema();
    return fail(ML_E_ARG, "%s", err->c_str());
  }
  out->compute_min_bytes();
  err->clear();
  return ML_OK;
}

void JsonSchema::compute_min_bytes() {
  constexpr uint64_t kCap = uint64_t(1) << 40;
  min_bytes_.assign(nodes_.size(), kCap);
  min_bytes_[0] = 1;  // any value: a digit
  for (size_t i = 1; i < nodes_.size(); ++i) {  // children come before their parents
    const Node &n = nodes_[i];
    uint64_t m = kCap;
    if (n.lit_lo >= 0) {
      for (int l = n.lit_lo; l < n.lit_hi; ++l) m = std::min<uint64_t>(m, literals_[size_t(l)].size());
    } else if (!n.any_of.empty()) {
      for (const int a : n.any_of) m = std::min(m, min_bytes_[size_t(a)]);
    } else {
      if (n.types & (kNum | kInt)) m = 1;
      if (n.types & (kBool | kNull)) m = std::min<uint64_t>(m, 4);
      if (n.types & kStr) m = std::min<uint64_t>(m, 2 + uint64_t(n.min_len));
      if (n.types & kArr) {
        const uint64_t k = n.min_items;
        m = std::min(m, k ? std::min(kCap, 2 + k * (min_bytes_[size_t(n.items)] + 1) - 1) : 2);
      }
      if (n.types & kObj) {
        uint64_t o = 1;  // '{' and '}' less one comma
        for (const Prop &p : n.props)
          if (p.required) o += p.key.size() + 4 + min_bytes_[size_t(p.node)];
        m = std::min(m, std::min(kCap, std::max<uint64_t>(o, 2)));
      }
    }
    min_bytes_[i] = m;
  }
}

// ---- Byte matcher.

namespace {

enum Kind : uint8_t { K_VAL, K_OBJ, K_ARR, K_STR, K_NUM, K_LIT };
enum ObjPhase : uint8_t { O_FIRST, O_KEYWS, O_KEY, O_COLON, O_VALUE, O_AFTER };
enum ArrPhase : uint8_t { A_FIRST, A_VALUE, A_AFTER };
enum NumPhase : uint8_t { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
constexpr size_t kMaxStack = 64;
constexpr size_t kMaxStacks = 64;  // alternative stacks carried at once
constexpr uint32_t kMaxExtraKey = 64;  // code points of a key not named in properties
constexpr uint32_t kMaxDigits = 15, kMaxExpDigits = 2;

JsonFrame value_frame(int node, uint8_t ws) {
  JsonFrame f;
  memset(&f, 0, sizeof f);
  f.node = node;
  f.kind = K_VAL;
  f.ws = ws;
  return f;
}

int hexval(uint8_t c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

// String content, one byte. 0: rejected, 1: consumed, 2: the closing quote (not consumed here).
// esc: 0 none, 1 after '\', 2..5 hex digits of \u (d1: 1 when it is a high surrogate), 6 '\' and
// 7 'u' of the low surrogate due, 12..15 its hex digits.
int str_byte(JsonFrame &t, uint8_t b, uint32_t max_cp, bool escapes) {
  if (t.need) {
    if (b < t.u_lo || b > t.u_hi) return 0;
    --t.need, t.u_lo = 0x80, t.u_hi = 0xBF;
    return 1;
  }
  switch (t.esc) {
    case 0: break;
    case 1:
      if (b == 'u') { t.esc = 2; return 1; }
      if (b && strchr("\"\\/bfnrt", b)) { t.esc = 0; return 1; }
      return 0;
    case 2: case 3: case 4: case 5: {
      const int h = hexval(b);
      if (h < 0) return 0;
      if (t.esc == 2) t.d1 = uint8_t(h);
      if (t.esc == 3 && t.d1 == 0xD) {
        if (h >= 0xC) return 0;  // a lone low surrogate
        t.d1 = h >= 8 ? 1 : 0;   // a high surrogate: its pair must follow
      } else if (t.esc == 3) {
        t.d1 = 0;
      }
      if (t.esc == 5) { t.esc = t.d1 ? 6 : 0; return 1; }
      ++t.esc;
      return 1;
    }
    case 6: if (b != '\\') return 0; t.esc = 7; return 1;
    case 7: if (b != 'u') return 0; t.esc = 12; return 1;
    case 12: if (b != 'd' && b != 'D') return 0; t.esc = 13; return 1;
    case 13: { const int h = hexval(b); if (h < 0xC) return 0; t.esc = 14; return 1; }
    case 14: if (hexval(b) < 0) return 0; t.esc = 15; return 1;
    case 15: if (hexval(b) < 0) return 0; t.esc = 0; return 1;
    default: return 0;
  }
  if (b == '"') return 2;
  if (b < 0x20) return 0;
  if (t.count >= max_cp) return 0;
  if (b == '\\') {
    if (!escapes) return 0;
    t.esc = 1;
  } else if (b >= 0x80) {
    uint8_t need, lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) need = 1;
    else if (b == 0xE0) need = 2, lo = 0xA0;
    else if (b == 0xED) need = 2, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) need = 2;
    else if (b == 0xF0) need = 3, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3) need = 3;
    else if (b == 0xF4) need = 3, hi = 0x8F;
    else return 0;
    t.need = need, t.u_lo = lo, t.u_hi = hi;
  }
  ++t.count;
  return 1;
}

bool more_keys(const JsonSchema::Node &n, const JsonFrame &t) {
  if (n.additional) return true;
  const uint64_t all = n.props.size() == 64 ? ~uint64_t(0) : (uint64_t(1) << n.props.size()) - 1;
  return (t.seen & all) != all;
}

void start_key(JsonFrame &t, const JsonSchema::Node &n) {
  t.phase = O_KEY;
  t.lo = 0, t.hi = uint32_t(n.props.size()), t.pos = 0;
  t.count = 0, t.need = 0, t.esc = 0;
  t.flag = n.additional;
}

// Object key byte. 0 rejected, 1 consumed.
int key_byte(JsonFrame &t, const JsonSchema::Node &n, uint8_t b) {
  const auto &P = n.props;
  const uint32_t p = t.pos;
  const bool exact = t.lo < t.hi && P[t.lo].key.size() == p;  // the text so far names a property
  if (b == '"' && exact) {
    if (t.seen >> t.lo & 1) return 0;  // a property given twice
    t.key = int32_t(t.lo), t.phase = O_COLON;
    return 1;
  }
  if (b == '"' && t.flag && t.need == 0 && t.esc == 0) {
    t.key = -1, t.phase = O_COLON;
    return 1;
  }
  uint32_t lo = t.lo;
  while (lo < t.hi && !(P[lo].key.size() > p && uint8_t(P[lo].key[p]) == b)) ++lo;
  uint32_t hi = lo;
  while (hi < t.hi && P[hi].key.size() > p && uint8_t(P[hi].key[p]) == b) ++hi;
  bool known = false;
  for (uint32_t i = lo; i < hi && !known; ++i) known = !(t.seen >> i & 1);
  bool extra = t.flag && str_byte(t, b, kMaxExtraKey, false) == 1;
  if (!known && !extra) return 0;
  t.lo = lo, t.hi = hi, t.flag = extra, t.pos = p + 1;
  return 1;
}

// After a child value's frame is popped.
void value_done(std::vector<JsonFrame> &f, size_t base) {
  if (f.size() == base) return;
  JsonFrame &p = f.back();
  if (p.kind == K_OBJ) {
    if (p.key >= 0) p.seen |= uint64_t(1) << p.key;
    p.phase = O_AFTER;
  } else if (p.kind == K_ARR) {
    ++p.count;
    p.phase = A_AFTER;
  }
}

bool num_complete(const JsonFrame &t) {
  return t.phase == N_ZERO || t.phase == N_INT || t.phase == N_FRAC || t.phase == N_EXP;
}

// Feeds b to the last stack of st. 0: rejected (caller drops it), 1: consumed, 2: the stack was
// replaced by its anyOf alternatives (already fed and kept or dropped).
int run(const JsonSchema &S, JsonState &st, uint8_t b) {
  std::vector<JsonFrame> &f = st.frames;
  const size_t base = st.starts.back();
  const auto &L = S.literals();
  for (;;) {
    if (f.size() == base) return 0;  // the document is closed: nothing may follow
    JsonFrame &t = f.back();
    const JsonSchema::Node &n = S.nodes()[size_t(t.node)];
    switch (t.kind) {
      case K_VAL: {
        if (b == ' ' && t.ws) { t.ws = 0; return 1; }
        if (!n.any_of.empty()) {
          std::vector<JsonFrame> saved(f.begin() + long(base), f.end());
          f.resize(base);
          st.starts.pop_back();
          for (const int alt : n.any_of) {
            st.starts.push_back(uint32_t(f.size()));
            f.insert(f.end(), saved.begin(), saved.end());
            f.back().node = alt;
            f.back().ws = 0;
            if (run(S, st, b) == 0) {
              f.resize(st.starts.back());
              st.starts.pop_back();
            }
          }
          return 2;
        }
        uint32_t lo = 0, hi = 0;
        if (n.lit_lo >= 0) lo = uint32_t(n.lit_lo), hi = uint32_t(n.lit_hi);
        else if ((b == 't' || b == 'f') && (n.types & JsonSchema::kBool)) lo = 0, hi = 2;
        else if (b == 'n' && (n.types & JsonSchema::kNull)) lo = 2, hi = 3;
        if (hi) {
          t.kind = K_LIT, t.lo = lo, t.hi = hi, t.pos = 0;
          continue;
        }
        const bool deep = f.size() - base >= kMaxStack;
        if (b == '{' && (n.types & JsonSchema::kObj) && !deep) {
          t.kind = K_OBJ, t.phase = O_FIRST, t.seen = 0, t.key = -1;
          return 1;
        }
        if (b == '[' && (n.types & JsonSchema::kArr) && !deep) {
          t.kind = K_ARR, t.phase = A_FIRST, t.count = 0;
          return 1;
        }
        if (b == '"' && (n.types & JsonSchema::kStr)) {
          t.kind = K_STR, t.count = 0;
          return 1;
        }
        if ((b == '-' || (b >= '0' && b <= '9')) && (n.types & (JsonSchema::kNum | JsonSchema::kInt))) {
          t.kind = K_NUM, t.phase = N_START, t.count = 0, t.nexp = 0;
          t.flag = !(n.types & JsonSchema::kNum);
          continue;
        }
        return 0;
      }
      case K_LIT: {
        // the candidates share their first p bytes and are sorted: by byte p, one that ends first
        const uint32_t p = t.pos;
        auto at = [&](uint32_t i) { return L[i].size() > p ? int(uint8_t(L[i][p])) : -1; };
        auto bound = [&](uint32_t a, uint32_t e, int v) {  // first index of [a, e) whose byte p is > v
          while (a < e) {
            const uint32_t m = a + (e - a) / 2;
            if (at(m) <= v) a = m + 1;
            else e = m;
          }
          return a;
        };
        const uint32_t lo = bound(t.lo, t.hi, int(b) - 1), hi = bound(lo, t.hi, int(b));
        if (lo == hi) {
          if (L[t.lo].size() != p) return 0;
          f.pop_back(), value_done(f, base);  // a complete literal: b belongs to the parent
          continue;
        }
        t.lo = lo, t.hi = hi, t.pos = p + 1;
        if (hi - lo == 1 && L[lo].size() == p + 1) f.pop_back(), value_done(f, base);
        return 1;
      }
      case K_NUM: {
        const bool digit = b >= '0' && b <= '9';
        switch (t.phase) {
          case N_START:
            if (b == '-') { t.phase = N_MINUS; return 1; }
            // fall through
          case N_MINUS:
            if (!digit) return 0;
            t.phase = b == '0' ? N_ZERO : N_INT, t.count = 1;
            return 1;
          case N_ZERO: case N_INT: case N_FRAC:
            if (digit && t.phase != N_ZERO && t.count < kMaxDigits) { ++t.count; return 1; }
            if (b == '.' && t.phase != N_FRAC && !t.flag && t.count < kMaxDigits) { t.phase = N_DOT; return 1; }
            if ((b == 'e' || b == 'E') && !t.flag) { t.phase = N_E; return 1; }
            break;
          case N_DOT:
            if (!digit) return 0;
            t.phase = N_FRAC, ++t.count;
            return 1;
          case N_E:
            if (b == '+' || b == '-') { t.phase = N_ESIGN; return 1; }
            // fall through
          case N_ESIGN:
            if (!digit) return 0;
            t.phase = N_EXP, t.nexp = 1;
            return 1;
          case N_EXP:
            if (digit && t.nexp < kMaxExpDigits) { ++t.nexp; return 1; }
            break;
          default: return 0;
        }
        f.pop_back(), value_done(f, base);  // a complete number: b belongs to the parent
        continue;
      }
      case K_STR: {
        const int r = str_byte(t, b, n.max_len, true);
        if (r != 2) return r;
        if (t.count < n.min_len) return 0;
        f.pop_back(), value_done(f, base);
        return 1;
      }
      case K_ARR:
        if (t.phase == A_FIRST) {
          if (b == ']' && n.min_items == 0) { f.pop_back(), value_done(f, base); return 1; }
          if (n.max_items == 0) return 0;
          t.phase = A_VALUE;
          f.push_back(value_frame(n.items, 0));
          continue;
        }
        if (t.phase == A_AFTER) {
          if (b == ',' && t.count < n.max_items) {
            t.phase = A_VALUE;
            f.push_back(value_frame(n.items, 1));
            return 1;
          }
          if (b == ']' && t.count >= n.min_items) { f.pop_back(), value_done(f, base); return 1; }
        }
        return 0;
      case K_OBJ:
        switch (t.phase) {
          case O_FIRST:
            if (b == '}' && n.required_mask == 0) { f.pop_back(), value_done(f, base); return 1; }
            if (b == '"' && more_keys(n, t)) { start_key(t, n); return 1; }
            return 0;
          case O_KEYWS:
            if (b == ' ' && t.ws) { t.ws = 0; return 1; }
            if (b == '"') { start_key(t, n); return 1; }
            return 0;
          case O_KEY: return key_byte(t, n, b);
          case O_COLON: {
            if (b != ':') return 0;
            t.phase = O_VALUE;
            const int child = t.key >= 0 ? n.props[size_t(t.key)].node : 0;
            f.push_back(value_frame(child, 1));
            return 1;
          }
          case O_AFTER:
            if (b == ',' && more_keys(n, t)) { t.phase = O_KEYWS, t.ws = 1; return 1; }
            if (b == '}' && (t.seen & n.required_mask) == n.required_mask) { f.pop_back(), value_done(f, base); return 1; }
            return 0;
          default: return 0;
        }
      default: return 0;
    }
  }
}

bool stack_complete(const JsonSchema &S, const JsonFrame *f, size_t n) {
  if (n == 0) return true;
  if (n != 1) return false;
  if (f[0].kind == K_NUM) return num_complete(f[0]);
  if (f[0].kind == K_LIT) return S.literals()[f[0].lo].size() == f[0].pos;
  return false;
}

}  // namespace

void JsonMatcher::step(const JsonSchema &s, const JsonState &in, uint8_t b, JsonState *out) {
  out->frames.clear();
  out->starts.clear();
  const size_t ns = in.starts.size();
  for (size_t i = 0; i < ns; ++i) {
    const size_t a = in.starts[i], e = i + 1 < ns ? in.starts[i + 1] : in.frames.size();
    out->starts.push_back(uint32_t(out->frames.size()));
    out->frames.insert(out->frames.end(), in.frames.begin() + long(a), in.frames.begin() + long(e));
    if (run(s, *out, b) == 0) {
      out->frames.resize(out->starts.back());
      out->starts.pop_back();
    }
  }
  if (out->starts.size() < 2) return;
  // drop repeated stacks (anyOf alternatives that reached the same state)
  JsonState &o = *out;
  std::vector<uint32_t> keep_start;
  std::vector<JsonFrame> kept;
  const size_t n = o.starts.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t a = o.starts[i], e = i + 1 < n ? o.starts[i + 1] : o.frames.size();
    bool dup = false;
    for (size_t j = 0; j < keep_start.size() && !dup; ++j) {
      const size_t ka = keep_start[j], ke = j + 1 < keep_start.size() ? keep_start[j + 1] : kept.size();
      dup = ke - ka == e - a && memcmp(&kept[ka], &o.frames[a], (e - a) * sizeof(JsonFrame)) == 0;
    }
    if (dup) continue;
    keep_start.push_back(uint32_t(kept.size()));
    kept.insert(kept.end(), o.frames.begin() + long(a), o.frames.begin() + long(e));
  }
  if (keep_start.size() > kMaxStacks) {  // a pathological anyOf nest: keep the first ones (each still valid)
    kept.resize(keep_start[kMaxStacks]);
    keep_start.resize(kMaxStacks);
  }
  o.frames.swap(kept);
  o.starts.swap(keep_start);
}

bool JsonMatcher::complete(const JsonSchema &s, const JsonState &st) {
  const size_t ns = st.starts.size();
  for (size_t i = 0; i < ns; ++i) {
    const size_t a = st.starts[i], e = i + 1 < ns ? st.starts[i + 1] : st.frames.size();
    if (stack_complete(s, st.frames.data() + a, e - a)) return true;
  }
  return false;
}

void JsonMatcher::reset(const JsonSchema &schema) {
  schema_ = &schema;
  st_.frames.assign(1, value_frame(schema.root(), 0));
  st_.starts.assign(1, 0);
}

bool JsonMatcher::feed(const char *bytes, size_t n) {
  if (!schema_) return false;
  const JsonState *cur = &st_;
  JsonState a;
  for (size_t i = 0; i < n; ++i) {
    step(*schema_, *cur, uint8_t(bytes[i]), &tmp_);
    if (tmp_.starts.empty()) return false;
    std::swap(a, tmp_);
    cur = &a;
  }
  if (n) std::swap(st_, a);
  return true;
}

namespace {

// Bytes an object still needs after its properties in `seen` (each required one: ,"key":value).
uint64_t object_rest(const JsonSchema &S, const JsonSchema::Node &n, uint64_t seen) {
  uint64_t r = 1;  // '}'
  for (size_t i = 0; i < n.props.size(); ++i)
    if (n.props[i].required && !(seen >> i & 1)) r += n.props[i].key.size() + 4 + S.min_bytes(n.props[i].node);
  return r;
}

uint64_t frame_rest(const JsonSchema &S, const JsonFrame &t) {
  const JsonSchema::Node &n = S.nodes()[size_t(t.node)];
  switch (t.kind) {
    case K_VAL: return S.min_bytes(t.node);
    case K_LIT: {
      uint64_t m = UINT64_MAX;
      for (uint32_t i = t.lo; i < t.hi; ++i) m = std::min<uint64_t>(m, S.literals()[i].size() - t.pos);
      return m;
    }
    case K_NUM: return num_complete(t) ? 0 : 1;
    case K_STR: {
      uint64_t e = 0;
      if (t.esc == 1) e = 1;
      else if (t.esc >= 2 && t.esc <= 5) e = uint64_t(6 - t.esc) + (t.esc >= 4 && t.d1 ? 6 : 0);
      else if (t.esc == 6 || t.esc == 7) e = uint64_t(12 - t.esc);
      else if (t.esc >= 12) e = uint64_t(16 - t.esc);
      return t.need + e + (t.count < n.min_len ? n.min_len - t.count : 0) + 1;
    }
    case K_ARR: {
      const uint64_t item = S.min_bytes(n.items) + 1;
      const uint64_t have = t.count + (t.phase == A_VALUE ? 1 : 0);
      if (t.phase == A_FIRST) return n.min_items ? n.min_items * item : 1;
      return (have < n.min_items ? (n.min_items - have) * item : 0) + 1;
    }
    case K_OBJ: {
      uint64_t req = 0, nreq = 0;
      for (size_t i = 0; i < n.props.size(); ++i)
        if (n.props[i].required && !(t.seen >> i & 1)) req += n.props[i].key.size() + 3 + S.min_bytes(n.props[i].node), ++nreq;
      switch (t.phase) {
        case O_FIRST: return nreq ? req + nreq : 1;
        case O_KEYWS: {
          if (nreq) return req + nreq;  // the first key needs no comma; then '}'
          uint64_t m = n.additional ? 4 : UINT64_MAX;  // "":0
          for (size_t i = 0; i < n.props.size(); ++i)
            if (!(t.seen >> i & 1)) m = std::min<uint64_t>(m, n.props[i].key.size() + 3 + S.min_bytes(n.props[i].node));
          return m + 1;
        }
        case O_KEY: {
          uint64_t m = UINT64_MAX;
          if (t.flag) m = t.need + 3 + object_rest(S, n, t.seen);  // close the extra key: ":0 then the rest
          for (uint32_t i = t.lo; i < t.hi; ++i) {
            if (t.seen >> i & 1) continue;
            const uint64_t c = n.props[i].key.size() - t.pos + 2 + S.min_bytes(n.props[i].node) +
                               object_rest(S, n, t.seen | uint64_t(1) << i);
            m = std::min(m, c);
          }
          return m;
        }
        case O_COLON: {
          const uint64_t seen = t.key >= 0 ? t.seen | uint64_t(1) << t.key : t.seen;
          return 1 + S.min_bytes(t.key >= 0 ? n.props[size_t(t.key)].node : 0) + object_rest(S, n, seen);
        }
        case O_VALUE: return object_rest(S, n, t.key >= 0 ? t.seen | uint64_t(1) << t.key : t.seen);
        case O_AFTER: return object_rest(S, n, t.seen);
        default: return 0;
      }
    }
    default: return 0;
  }
}

}  // namespace

uint64_t JsonMatcher::min_remaining() const {
  if (!schema_) return 0;
  uint64_t best = UINT64_MAX;
  for (size_t i = 0; i < st_.starts.size(); ++i) {
    const size_t a = st_.starts[i], e = i + 1 < st_.starts.size() ? st_.starts[i + 1] : st_.frames.size();
    if (stack_complete(*schema_, st_.frames.data() + a, e - a)) return 0;
    uint64_t r = 0;
    for (size_t k = a; k < e; ++k) r += frame_rest(*schema_, st_.frames[k]);
    best = std::min(best, r);
  }
  return best;
}

bool JsonMatcher::complete() const { return schema_ && complete(*schema_, st_); }

bool JsonMatcher::finished() const {
  if (!complete()) return false;
  JsonState next;
  for (int b = 0; b < 256; ++b) {  // e.g. a root integer 0 is complete and takes no further byte
    step(*schema_, st_, uint8_t(b), &next);
    if (!next.starts.empty()) return false;
  }
  return true;
}

// ---- Token masks.

ml_status token_bytes_of(const Tokenizer &tok, TokenBytes *out) {
  out->assign(size_t(tok.vocab()), std::string());
  for (int id = 0; id < tok.vocab(); ++id) {
    if (tok.kind() == Tokenizer::kByteLevel) {
      if (id >= tok.bpe().n_tokens() || tok.bpe().kind(id) != BpeTokenizer::kNormal) continue;
      size_t len = 0;
      const char *p = tok.bpe().decode(id, &len);
      (*out)[size_t(id)].assign(p, len);
    } else {
      if (id < 3) continue;  // <unk>, BOS, EOS
      const char *p = tok.piece(id);
      if (strlen(p) == 6 && memcmp(p, "<0x", 3) == 0 && p[5] == '>' && hexval(uint8_t(p[3])) >= 0 && hexval(uint8_t(p[4])) >= 0)
        (*out)[size_t(id)].assign(1, char(hexval(uint8_t(p[3])) * 16 + hexval(uint8_t(p[4]))));
      else
        (*out)[size_t(id)] = p;
    }
  }
  return ML_OK;
}

namespace {
// Code points of a token that is plain string text (complete UTF-8, no '"', '\' or control
// bytes), else -1.
int32_t plain_code_points(const std::string &s) {
  if (s.empty()) return -1;
  JsonFrame t;
  memset(&t, 0, sizeof t);
  for (const char c : s)
    if (str_byte(t, uint8_t(c), UINT32_MAX, false) != 1) return -1;
  return t.need ? -1 : int32_t(t.count);
}
}  // namespace

ml_status JsonVocab::init(const TokenBytes &tokens, std::string *err) {
  std::string local;
  if (!err) err = &local;
  tokens_ = tokens;
  bool single[256] = {};
  for (const std::string &s : tokens_) if (s.size() == 1) single[uint8_t(s[0])] = true;
  for (int b = 0x20; b <= 0xF4; ++b) {
    if (b == 0x7F || (b >= 0xC0 && b <= 0xC1)) continue;
    if (!single[b]) {
      char buf[200];
      snprintf(buf, sizeof buf, "vocabulary has no single-byte token for byte 0x%02X (constrained JSON needs one for "
               "every byte of 0x20..0x7E, 0x80..0xBF, 0xC2..0xF4)", unsigned(b));
      *err = buf;
      return fail(ML_E_ARG, "%s", buf);
    }
  }
  const size_t V = tokens_.size();
  plain_cp_.assign(V, -1);
  std::vector<int> ids;
  size_t max_len = 0;
  for (size_t i = 0; i < V; ++i) {
    if (tokens_[i].empty()) continue;
    ids.push_back(int(i));
    plain_cp_[i] = plain_code_points(tokens_[i]);
    max_len = std::max(max_len, tokens_[i].size());
  }
  std::sort(ids.begin(), ids.end(), [&](int a, int b) { return tokens_[size_t(a)] < tokens_[size_t(b)]; });
  auto build = [&](Sorted *s, bool special_only) {
    s->ids.clear(), s->lcp.clear();
    const std::string *prev = nullptr;
    for (const int id : ids) {
      if (special_only && plain_cp_[size_t(id)] >= 0) continue;
      const std::string &t = tokens_[size_t(id)];
      size_t l = 0;
      if (prev) while (l < prev->size() && l < t.size() && (*prev)[l] == t[l]) ++l;
      s->ids.push_back(id);
      s->lcp.push_back(uint16_t(std::min<size_t>(l, 65535)));
      prev = &t;
    }
  };
  build(&all_, false);
  build(&special_, true);
  by_plain_len_.clear();
  for (size_t i = 0; i < V; ++i) if (plain_cp_[i] >= 0) by_plain_len_.push_back(int(i));
  std::stable_sort(by_plain_len_.begin(), by_plain_len_.end(), [&](int a, int b) { return plain_cp_[size_t(a)] < plain_cp_[size_t(b)]; });
  max_len_ = max_len;
  err->clear();
  return ML_OK;
}

ml_status JsonConstraint::init(const JsonSchema &schema, const JsonVocab &vocab) {
  if (schema.nodes().empty()) return fail(ML_E_ARG, "JsonConstraint::init: the schema is not compiled");
  schema_ = &schema;
  vocab_ = &vocab;
  if (depth_.size() < vocab.max_len_ + 1) depth_.resize(vocab.max_len_ + 1);
  reset();
  return ML_OK;
}

void JsonConstraint::reset() {
  if (schema_) m_.reset(*schema_);
}

void JsonConstraint::walk(const JsonVocab::Sorted &list, std::vector<uint8_t> *mask) {
  const TokenBytes &tok = vocab_->tokens_;
  depth_[0] = m_.state();
  const size_t N = list.ids.size();
  size_t i = 0;
  while (i < N) {
    const int id = list.ids[i];
    const std::string &s = tok[size_t(id)];
    size_t d = list.lcp[i];
    bool dead = false;
    for (; d < s.size(); ++d) {
      JsonMatcher::step(*schema_, depth_[d], uint8_t(s[d]), &depth_[d + 1]);
      if (depth_[d + 1].starts.empty()) { dead = true; break; }
    }
    if (!dead) (*mask)[size_t(id)] = 1;
    ++i;
    if (dead) while (i < N && list.lcp[i] > d) ++i;  // every token below the rejected prefix
  }
}

bool JsonConstraint::fits(int id) {
  const std::string &s = vocab_->tokens_[size_t(id)];
  depth_[0] = m_.state();
  for (size_t d = 0; d < s.size(); ++d) {
    JsonMatcher::step(*schema_, depth_[d], uint8_t(s[d]), &depth_[d + 1]);
    if (depth_[d + 1].starts.empty()) return false;
  }
  return true;
}

void JsonConstraint::allowed(std::vector<uint8_t> *mask) {
  const TokenBytes &tok = vocab_->tokens_;
  const std::vector<int32_t> &plain = vocab_->plain_cp_;
  const std::vector<int> &by_len = vocab_->by_plain_len_;
  // Inside a string, or a key that may still be a key not named in properties (in every
  // alternative stack): a plain-text token only has to fit the largest length room left; the
  // other tokens are walked.
  const JsonState &st = m_.state();
  const size_t ns = st.starts.size();
  bool eligible = ns > 0, any_key = false;
  uint64_t room64 = 0;
  for (size_t i = 0; i < ns && eligible; ++i) {
    const size_t e = i + 1 < ns ? st.starts[i + 1] : st.frames.size();
    if (e == st.starts[i]) { eligible = false; break; }
    const JsonFrame &t = st.frames[e - 1];
    const bool str = t.kind == K_STR && t.need == 0 && t.esc == 0;
    const bool key = t.kind == K_OBJ && t.phase == O_KEY && t.flag && t.need == 0 && t.esc == 0;
    eligible = str || key;
    any_key = any_key || key;
    const uint64_t max = str ? schema_->nodes()[size_t(t.node)].max_len : kMaxExtraKey;
    room64 = std::max(room64, max - t.count);
  }
  if (eligible) {
    const uint32_t room = uint32_t(std::min<uint64_t>(room64, 0xFFFFFFFEu));
    mask->resize(tok.size());
    uint8_t *m = mask->data();
    const int32_t *cp = plain.data();
    const size_t V = tok.size();
    for (size_t i = 0; i < V; ++i) m[i] = uint32_t(cp[i]) <= room;  // -1 (not plain) never fits
    walk(vocab_->special_, mask);
    if (any_key) {  // longer plain tokens may still continue a property's name
      auto it = std::upper_bound(by_len.begin(), by_len.end(), room,
                                 [&](uint32_t r, int id) { return r < uint32_t(plain[size_t(id)]); });
      for (; it != by_len.end(); ++it) m[*it] = fits(*it);
    }
    return;
  }
  mask->assign(tok.size(), 0);
  walk(vocab_->all_, mask);
}

void JsonConstraint::allowed_walk_only(std::vector<uint8_t> *mask) {
  mask->assign(vocab_->tokens_.size(), 0);
  walk(vocab_->all_, mask);
}

bool JsonConstraint::accept(int token) {
  const TokenBytes &tok = vocab_->tokens_;
  if (token < 0 || size_t(token) >= tok.size() || tok[size_t(token)].empty()) return false;
  const std::string &s = tok[size_t(token)];
  return m_.feed(s.data(), s.size());
}

}  // namespace ml
