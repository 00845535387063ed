// GGUF read by the runtime (runtime/gguf.h): the container's validation, the model mapping and
// the conversion into the runtime's layouts. The mapping follows tools/gguf.py's GgufReader (the
// facts: ggml's docs/gguf.md and llama.cpp's tensor names), so a GGUF run directly and the .mlb
// convert.py makes of it give the same bits (verify/tests/test_cli.py).
#include "runtime/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "kernels/mutants.h"
#include "runtime/error.h"

namespace ml {

namespace {

// ggml.h's type ids; ids 4, 5 and 31-33, 36-38 were removed from ggml (bytes 0).
constexpr GgmlType kTypes[] = {
    {"F32", 1, 4},        {"F16", 1, 2},       {"Q4_0", 32, 18},    {"Q4_1", 32, 20},    {"type 4", 0, 0},
    {"type 5", 0, 0},     {"Q5_0", 32, 22},    {"Q5_1", 32, 24},    {"Q8_0", 32, 34},    {"Q8_1", 32, 36},
    {"Q2_K", 256, 84},    {"Q3_K", 256, 110},  {"Q4_K", 256, 144},  {"Q5_K", 256, 176},  {"Q6_K", 256, 210},
    {"Q8_K", 256, 292},   {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
    {"IQ4_NL", 32, 18},   {"IQ3_S", 256, 110}, {"IQ2_S", 256, 82},  {"IQ4_XS", 256, 136}, {"I8", 1, 1},
    {"I16", 1, 2},        {"I32", 1, 4},       {"I64", 1, 8},       {"F64", 1, 8},       {"IQ1_M", 256, 56},
    {"BF16", 1, 2},       {"type 31", 0, 0},   {"type 32", 0, 0},   {"type 33", 0, 0},   {"TQ1_0", 256, 54},
    {"TQ2_0", 256, 66},   {"type 36", 0, 0},   {"type 37", 0, 0},   {"type 38", 0, 0},   {"MXFP4", 32, 17},
};
constexpr uint32_t kNumTypes = sizeof kTypes / sizeof kTypes[0];

uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// A bounds-checked reader over the container; `what` names the field being read for messages.
struct Cursor {
  const uint8_t *p;
  uint64_t size, pos;
  const char *path;
  uint64_t avail;       // bytes present (a streamed file's first bytes), <= size
  bool *short_header;   // set when the header runs past them
  std::string what = "the header";
  ml_status need(uint64_t n) const {
    if (n > size - pos)
      return fail(ML_E_FORMAT, "%s: truncated GGUF: %s runs past the end of the file (%llu bytes)", path, what.c_str(),
                  static_cast<unsigned long long>(size));
    if (n > avail - pos) {
      *short_header = true;
      return fail(ML_E_FORMAT, "%s: %s runs past the first %llu bytes given", path, what.c_str(),
                  static_cast<unsigned long long>(avail));
    }
    return ML_OK;
  }
  ml_status u(int n, uint64_t *v) {
    if (const ml_status s = need(uint64_t(n))) return s;
    *v = rd(p + pos, n);
    pos += uint64_t(n);
    return ML_OK;
  }
  ml_status string(std::string *out, uint64_t limit) {
    uint64_t n;
    if (const ml_status s = u(8, &n)) return s;
    if (n > limit)
      return fail(ML_E_FORMAT, "%s: %s is a string of %llu bytes (at most %llu here)", path, what.c_str(),
                  static_cast<unsigned long long>(n), static_cast<unsigned long long>(limit));
    if (const ml_status s = need(n)) return s;
    out->assign(reinterpret_cast<const char *>(p + pos), size_t(n));
    pos += n;
    return ML_OK;
  }
  // The name of entry i of a list ("metadata key 3", then "metadata general.name" for what follows).
  ml_status name(const char *list, uint64_t i, const char *entry, std::string *out, uint64_t limit) {
    what = std::string(list) + " " + std::to_string(i);
    if (const ml_status s = string(out, limit)) return s;
    what = std::string(entry) + " " + gguf_printable(*out);
    return ML_OK;
  }
};

int scalar_bytes(uint32_t t) {
  switch (t) {
    case GgufFile::kU8: case GgufFile::kI8: case GgufFile::kBool: return 1;
    case GgufFile::kU16: case GgufFile::kI16: return 2;
    case GgufFile::kU32: case GgufFile::kI32: case GgufFile::kF32: return 4;
    case GgufFile::kU64: case GgufFile::kI64: case GgufFile::kF64: return 8;
    default: return 0;
  }
}
bool is_int_type(uint32_t t) {
  return t == GgufFile::kU8 || t == GgufFile::kI8 || t == GgufFile::kU16 || t == GgufFile::kI16 ||
         t == GgufFile::kU32 || t == GgufFile::kI32 || t == GgufFile::kU64 || t == GgufFile::kI64;
}
int64_t read_int(const uint8_t *p, uint32_t t) {
  switch (t) {
    case GgufFile::kU8: return p[0];
    case GgufFile::kI8: return int8_t(p[0]);
    case GgufFile::kU16: return int64_t(rd(p, 2));
    case GgufFile::kI16: return int16_t(rd(p, 2));
    case GgufFile::kU32: return int64_t(rd(p, 4));
    case GgufFile::kI32: return int32_t(rd(p, 4));
    case GgufFile::kU64: {
      const uint64_t v = rd(p, 8);
      return v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v);
    }
    default: return int64_t(rd(p, 8));
  }
}
double read_float(const uint8_t *p, uint32_t t) {
  if (t == GgufFile::kF32) {
    const uint32_t u = uint32_t(rd(p, 4));
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  if (t == GgufFile::kF64) {
    const uint64_t u = rd(p, 8);
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  }
  return double(read_int(p, t));
}

const char *value_type_name(uint32_t t) {
  static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  return t < 13 ? names[t] : "?";
}

// Skips a value of type t (validated), depth: nesting of arrays.
ml_status skip_value(Cursor &c, uint32_t t, int depth) {
  if (const int n = scalar_bytes(t)) {
    if (const ml_status s = c.need(uint64_t(n))) return s;
    c.pos += uint64_t(n);
    return ML_OK;
  }
  if (t == GgufFile::kString) {
    uint64_t n;
    if (const ml_status s = c.u(8, &n)) return s;
    if (const ml_status s = c.need(n)) return s;
    c.pos += n;
    return ML_OK;
  }
  if (t != GgufFile::kArray)
    return fail(ML_E_FORMAT, "%s: %s has value type %u, which is not a GGUF type (0-12)", c.path, c.what.c_str(), t);
  if (depth >= 2) return fail(ML_E_FORMAT, "%s: %s nests arrays more than two deep", c.path, c.what.c_str());
  uint64_t item, count;
  if (const ml_status s = c.u(4, &item)) return s;
  if (const ml_status s = c.u(8, &count)) return s;
  // Every item takes at least one byte (a string 8, an array 12): the count is bounded by the file.
  const uint64_t min_item = scalar_bytes(uint32_t(item)) ? uint64_t(scalar_bytes(uint32_t(item)))
                            : item == GgufFile::kString ? 8 : 12;
  if (count > (c.size - c.pos) / min_item)
    return fail(ML_E_FORMAT, "%s: %s is an array of %llu items of type %s, more than the %llu bytes left in the file hold",
                c.path, c.what.c_str(), static_cast<unsigned long long>(count), value_type_name(uint32_t(item)),
                static_cast<unsigned long long>(c.size - c.pos));
  if (scalar_bytes(uint32_t(item))) {
    if (const ml_status s = c.need(count * min_item)) return s;  // (within the file: only a short header fails)
    c.pos += count * min_item;
    return ML_OK;
  }
  for (uint64_t i = 0; i < count; ++i)
    if (const ml_status s = skip_value(c, uint32_t(item), depth + 1)) return s;
  return ML_OK;
}

}  // namespace

const GgmlType *ggml_type(uint32_t id) { return id < kNumTypes ? &kTypes[id] : nullptr; }

std::string gguf_printable(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 64) return out + "...";
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch < 0x20 || ch == 0x7f || ch == '\\') {
      char e[8];
      std::snprintf(e, sizeof e, "\\x%02x", ch);
      out += e;
    } else {
      out += char(ch);
    }
  }
  return out;
}

bool is_gguf(const uint8_t *data, uint64_t size) { return size >= 4 && std::memcmp(data, "GGUF", 4) == 0; }

ml_status GgufFile::parse(const uint8_t *data, uint64_t size, const char *path, uint64_t avail) {
  data_ = data;
  size_ = size;
  path_ = path ? path : "GGUF";
  header_short_ = false;
  Cursor c{data, size, 0, path_, std::min(avail, size), &header_short_};
  if (size < 24)
    return fail(ML_E_FORMAT, "%s: %llu bytes, too short for a GGUF header (24)", path_, static_cast<unsigned long long>(size));
  if (c.avail < 24) return c.need(24);
  if (!is_gguf(data, size)) return fail(ML_E_FORMAT, "%s: not a GGUF file (no \"GGUF\" magic)", path_);
  c.pos = 4;
  uint64_t version, n_tensors, n_kv;
  c.u(4, &version);
  if (version != 2 && version != 3) {
    if ((version & 0xFFFF) == 0 && (version >> 16) != 0)
      return fail(ML_E_FORMAT, "%s: header field version: a big-endian GGUF, which this runtime does not read", path_);
    return fail(ML_E_FORMAT, "%s: header field version = %llu; GGUF versions 2 and 3 are read", path_,
                static_cast<unsigned long long>(version));
  }
  version_ = uint32_t(version);
  c.u(8, &n_tensors);
  c.u(8, &n_kv);
  // Each metadata entry takes at least 13 bytes (key length, one key byte, type, a one-byte
  // value), each tensor entry at least 29 (name length, one name byte, n_dims, one dimension, type,
  // offset): counts past that are corrupt, refused before anything is reserved for them.
  if (n_kv > (size - c.pos) / 13)
    return fail(ML_E_FORMAT, "%s: header field n_kv = %llu: more metadata entries than the %llu-byte file holds", path_,
                static_cast<unsigned long long>(n_kv), static_cast<unsigned long long>(size));
  if (n_tensors > (size - c.pos) / 29)
    return fail(ML_E_FORMAT, "%s: header field n_tensors = %llu: more tensors than the %llu-byte file holds", path_,
                static_cast<unsigned long long>(n_tensors), static_cast<unsigned long long>(size));
  kv_.clear();
  kv_.reserve(size_t(n_kv));
  std::unordered_map<std::string, size_t> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    Kv kv;
    if (const ml_status s = c.name("metadata key", i, "metadata", &kv.key, 1u << 16)) return s;
    uint64_t t;
    if (const ml_status s = c.u(4, &t)) return s;
    kv.type = uint32_t(t);
    if (t > kF64)
      return fail(ML_E_FORMAT, "%s: metadata %s has value type %llu, which is not a GGUF type (0-12)", path_, gguf_printable(kv.key).c_str(),
                  static_cast<unsigned long long>(t));
    kv.off = c.pos;
    if (kv.type == kArray) {
      uint64_t item, count;
      if (const ml_status s = c.u(4, &item)) return s;
      if (const ml_status s = c.u(8, &count)) return s;
      kv.item = uint32_t(item);
      kv.count = count;
      c.pos = kv.off;
      kv.off += 12;
    }
    if (const ml_status s = skip_value(c, kv.type, 0)) return s;
    if (!keys.emplace(kv.key, kv_.size()).second)
      return fail(ML_E_FORMAT, "%s: metadata %s appears twice", path_, gguf_printable(kv.key).c_str());
    kv_.push_back(std::move(kv));
  }
  uint64_t alignment = 32;
  if (const Kv *a = find("general.alignment")) {
    const int64_t v = is_int_type(a->type) ? read_int(data + a->off, a->type) : 0;
    if (v < 1 || v > (1 << 20) || (v & (v - 1)) != 0)
      return fail(ML_E_FORMAT, "%s: metadata general.alignment must be a power of two in [1, 2^20]", path_);
    alignment = uint64_t(v);
  }
  tensors_.clear();
  tensors_.reserve(size_t(n_tensors));
  std::unordered_map<std::string, size_t> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Tensor t;
    if (const ml_status s = c.name("tensor info", i, "tensor info", &t.name, 256)) return s;
    uint64_t nd;
    if (const ml_status s = c.u(4, &nd)) return s;
    if (nd < 1 || nd > 4)
      return fail(ML_E_FORMAT, "%s: tensor %s has n_dims = %llu (1 to 4)", path_, gguf_printable(t.name).c_str(), static_cast<unsigned long long>(nd));
    t.n_dims = uint32_t(nd);
    for (int d = 0; d < 4; ++d) t.ne[d] = 1;
    for (uint64_t d = 0; d < nd; ++d) {
      if (const ml_status s = c.u(8, &t.ne[d])) return s;
      if (t.ne[d] < 1 || t.ne[d] >= (uint64_t(1) << 31))
        return fail(ML_E_FORMAT, "%s: tensor %s: dimension %llu is %llu (1 to 2^31 - 1)", path_, gguf_printable(t.name).c_str(),
                    static_cast<unsigned long long>(d), static_cast<unsigned long long>(t.ne[d]));
    }
    uint64_t type;
    if (const ml_status s = c.u(4, &type)) return s;
    if (const ml_status s = c.u(8, &t.off)) return s;
    t.type = uint32_t(type);
    const GgmlType *g = ggml_type(t.type);
    if (!g || g->bytes == 0)
      return fail(ML_E_FORMAT, "%s: tensor %s has type id %llu, which is not a ggml type", path_, gguf_printable(t.name).c_str(),
                  static_cast<unsigned long long>(type));
    if (t.ne[0] % g->block != 0)
      return fail(ML_E_FORMAT, "%s: tensor %s (%s) has %llu columns, not a multiple of its block of %u", path_, gguf_printable(t.name).c_str(),
                  g->name, static_cast<unsigned long long>(t.ne[0]), g->block);
    // The rows ne1·ne2·ne3 in steps, none of which wraps: ne1·ne2 < 2^62 (each dimension < 2^31),
    // then ne3 against size / (ne1·ne2) by division. (The full product in 64 bits wraps: 2731 ·
    // 161087163 · 83862361 = 2·2^64 + 1 passed as one row.)
    const uint64_t rows12 = t.ne[1] * t.ne[2];
    if (rows12 > size || t.ne[3] > size / rows12)
      return fail(ML_E_FORMAT, "%s: tensor %s has %llux%llux%llu rows, more than the file holds", path_, gguf_printable(t.name).c_str(),
                  static_cast<unsigned long long>(t.ne[3]), static_cast<unsigned long long>(t.ne[2]),
                  static_cast<unsigned long long>(t.ne[1]));
    const uint64_t rows = rows12 * t.ne[3];
    const uint64_t row_bytes = t.ne[0] / g->block * g->bytes;
    if (row_bytes > size || rows * row_bytes > size)  // each factor <= size < 2^63: no wrap before the test
      return fail(ML_E_FORMAT, "%s: tensor %s (%s) is larger than the file (%llu bytes)", path_, gguf_printable(t.name).c_str(), g->name,
                  static_cast<unsigned long long>(size));
    t.bytes = rows * row_bytes;
    if (t.off % alignment != 0)
      return fail(ML_E_FORMAT, "%s: tensor %s: offset %llu is not a multiple of the alignment %llu", path_, gguf_printable(t.name).c_str(),
                  static_cast<unsigned long long>(t.off), static_cast<unsigned long long>(alignment));
    if (!names.emplace(t.name, tensors_.size()).second)
      return fail(ML_E_FORMAT, "%s: tensor %s appears twice", path_, gguf_printable(t.name).c_str());
    tensors_.push_back(std::move(t));
  }
  data_off_ = (c.pos + alignment - 1) / alignment * alignment;
  if (data_off_ > size)
    return fail(ML_E_FORMAT, "%s: truncated GGUF: the data section would start at byte %llu, past the end (%llu bytes)", path_,
                static_cast<unsigned long long>(data_off_), static_cast<unsigned long long>(size));
  std::vector<const Tensor *> by_off;
  for (const Tensor &t : tensors_) {
    if (t.off > size - data_off_ || t.bytes > size - data_off_ - t.off)
      return fail(ML_E_FORMAT, "%s: tensor %s (%s, [%llu, %llu) of the data section) runs past the end of the file (truncated?)",
                  path_, gguf_printable(t.name).c_str(), ggml_type(t.type)->name, static_cast<unsigned long long>(t.off),
                  static_cast<unsigned long long>(t.off + t.bytes));
    by_off.push_back(&t);
  }
  std::sort(by_off.begin(), by_off.end(), [](const Tensor *a, const Tensor *b) { return a->off < b->off; });
  for (size_t i = 1; i < by_off.size(); ++i)
    if (by_off[i - 1]->off + by_off[i - 1]->bytes > by_off[i]->off && !ML_MUTANT("gguf_overlap"))  // mutant: overlap allowed
      return fail(ML_E_FORMAT, "%s: tensors %s and %s overlap in the data section", path_, gguf_printable(by_off[i - 1]->name).c_str(),
                  gguf_printable(by_off[i]->name).c_str());
  return ML_OK;
}

const GgufFile::Kv *GgufFile::find(const char *key) const {
  for (const Kv &kv : kv_)
    if (kv.key == key) return &kv;
  return nullptr;
}

const GgufFile::Tensor *GgufFile::tensor(const std::string &name) const {
  for (const Tensor &t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

// The entry of `key` when ok(entry), else nullptr with *s: ML_OK for an absent optional key (found
// given), else an error naming the key and what it should be.
const GgufFile::Kv *GgufFile::need(const char *key, bool *found, ml_status *s, bool (*ok)(const Kv &),
                                   const char *what) const {
  *s = ML_OK;
  const Kv *kv = find(key);
  if (found) *found = kv != nullptr;
  if (!kv) {
    if (!found) *s = fail(ML_E_FORMAT, "%s: missing metadata key %s", path_, key);
    return nullptr;
  }
  if (ok(*kv)) return kv;
  *s = std::strncmp(what, "an array", 8) == 0
           ? fail(ML_E_FORMAT, "%s: metadata %s is not %s", path_, key, what)
           : fail(ML_E_FORMAT, "%s: metadata %s is a %s, not %s", path_, key, value_type_name(kv->type), what);
  return nullptr;
}

namespace {
bool number_type(uint32_t t) { return is_int_type(t) || t == GgufFile::kF32 || t == GgufFile::kF64; }
}  // namespace

ml_status GgufFile::get_int(const char *key, int64_t *v, bool *found) const {
  ml_status s;
  if (const Kv *kv = need(key, found, &s, [](const Kv &k) { return is_int_type(k.type); }, "an integer"))
    *v = read_int(data_ + kv->off, kv->type);
  return s;
}

ml_status GgufFile::get_float(const char *key, double *v, bool *found) const {
  ml_status s;
  if (const Kv *kv = need(key, found, &s, [](const Kv &k) { return number_type(k.type); }, "a number"))
    *v = read_float(data_ + kv->off, kv->type);
  return s;
}

ml_status GgufFile::get_bool(const char *key, bool *v, bool *found) const {
  ml_status s;
  if (const Kv *kv = need(key, found, &s, [](const Kv &k) { return k.type == kBool; }, "a bool"))
    *v = data_[kv->off] != 0;
  return s;
}

ml_status GgufFile::get_string(const char *key, std::string *v, bool *found) const {
  ml_status s;
  if (const Kv *kv = need(key, found, &s, [](const Kv &k) { return k.type == kString; }, "a string"))
    v->assign(reinterpret_cast<const char *>(data_ + kv->off + 8), size_t(rd(data_ + kv->off, 8)));
  return s;
}

ml_status GgufFile::get_strings(const char *key, std::vector<std::pair<const char *, uint64_t>> *v, bool *found) const {
  ml_status s;
  const Kv *kv = need(key, found, &s, [](const Kv &k) { return k.type == kArray && k.item == kString; },
                      "an array of strings");
  if (!kv) return s;
  v->clear();
  v->reserve(size_t(kv->count));  // bounded by parse(): 8 bytes of the file per item
  uint64_t at = kv->off;
  for (uint64_t i = 0; i < kv->count; ++i) {
    const uint64_t n = rd(data_ + at, 8);
    v->emplace_back(reinterpret_cast<const char *>(data_ + at + 8), n);
    at += 8 + n;
  }
  return ML_OK;
}

namespace {
// An array entry's numbers, each read as its item type and converted to T.
template <class T, class Read>
void read_numbers(const uint8_t *data, const GgufFile::Kv &kv, std::vector<T> *v, Read read) {
  v->resize(size_t(kv.count));
  const uint64_t n = uint64_t(scalar_bytes(kv.item));
  for (uint64_t i = 0; i < kv.count; ++i) (*v)[size_t(i)] = T(read(data + kv.off + i * n, kv.item));
}
bool int_array(const GgufFile::Kv &k) { return k.type == GgufFile::kArray && is_int_type(k.item); }
bool number_array(const GgufFile::Kv &k) { return k.type == GgufFile::kArray && number_type(k.item); }
}  // namespace

ml_status GgufFile::get_ints(const char *key, std::vector<int64_t> *v, bool *found) const {
  ml_status s;
  if (const Kv *kv = need(key, found, &s, int_array, "an array of integers")) read_numbers(data_, *kv, v, read_int);
  return s;
}

ml_status GgufFile::get_floats(const char *key, std::vector<float> *v, bool *found) const {
  ml_status s;
  if (const Kv *kv = need(key, found, &s, number_array, "an array of numbers")) read_numbers(data_, *kv, v, read_float);
  return s;
}

}  // namespace ml
