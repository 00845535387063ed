// Unicode facts for the byte-level tokenizers (contracts in unicode.h): general category major
// class, White_Space, and NFC, all from the tables tools/gen_unicode.py generates out of Python's
// unicodedata into unicode_data.inc (binary-searched; code points below U+0100 take a direct table).
#include "runtime/text/unicode.h"

#include <algorithm>
#include <new>
#include <vector>

namespace ml::unicode {
namespace {

#include "runtime/text/unicode_data.inc"

// The class numbers gen_unicode.py writes into kCategoryRuns.
static_assert(kOther == 0 && kLetter == 1 && kMark == 2 && kNumber == 3 && kPunct == 4 && kSymbol == 5 &&
              kSeparator == 6, "tools/gen_unicode.py MAJOR");

template <class T, size_t N>
constexpr size_t count_of(const T (&)[N]) {
  return N;
}

// Index of the last entry of a sorted uint32 table whose value is <= key (the table's first entry
// is <= every key we search for).
size_t last_le(const uint32_t *t, size_t n, uint32_t key) {
  size_t lo = 0, hi = n;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    if (t[mid] <= key) lo = mid; else hi = mid;
  }
  return lo;
}

// Category from the runs table (any code point; > U+10FFFF is kOther).
Category category_slow(uint32_t cp) {
  if (cp > 0x10FFFF) return kOther;
  const uint32_t v = kCategoryRuns[last_le(kCategoryRuns, count_of(kCategoryRuns), cp << 3 | 7)];
  return static_cast<Category>(v & 7);
}

// Latin-1 categories, built at compile time from the runs table's first entries (no code runs at
// start-up).
struct Latin1 {
  uint8_t cat[256];
  constexpr Latin1() : cat() {
    size_t r = 0;
    for (uint32_t cp = 0; cp < 256; ++cp) {
      while (r + 1 < count_of(kCategoryRuns) && (kCategoryRuns[r + 1] >> 3) <= cp) ++r;
      cat[cp] = static_cast<uint8_t>(kCategoryRuns[r] & 7);
    }
  }
};
constexpr Latin1 kLatin1{};

// Canonical combining class.
uint8_t ccc(uint32_t cp) {
  if (cp < 0x300) return 0;
  return static_cast<uint8_t>(kCccRuns[last_le(kCccRuns, count_of(kCccRuns), cp << 8 | 0xFF)] & 0xFF);
}

// True when a segment may start at cp: NFC of text splits there (ccc 0 and NFC_Quick_Check Yes).
bool nfc_boundary(uint32_t cp) {
  if (cp < 0x300) return true;
  if (cp < kNfcUnsafe[0]) return true;
  return (last_le(kNfcUnsafe, count_of(kNfcUnsafe), cp) & 1) != 0;  // after an odd count of toggles: unsafe
}

// Hangul syllable algorithm (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// The one-step canonical mapping of cp (kDecomp row), or nullptr.
const uint32_t *decomp_row(uint32_t cp) {
  const size_t n = count_of(kDecomp);
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (kDecomp[mid][0] < cp) lo = mid + 1; else hi = mid;
  }
  return lo < n && kDecomp[lo][0] == cp ? kDecomp[lo] : nullptr;
}

// The primary composite of (a, b), or 0 when the pair does not compose.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a - kLBase < kLCount && b - kVBase < kVCount) return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a - kSBase < kSCount && (a - kSBase) % kTCount == 0 && b - kTBase - 1 < kTCount - 1) return a + (b - kTBase);
  const uint64_t key = uint64_t(a) << 21 | b;
  size_t lo = 0, hi = count_of(kComp);
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if ((uint64_t(kComp[mid][0]) << 21 | kComp[mid][1]) < key) lo = mid + 1; else hi = mid;
  }
  return lo < count_of(kComp) && kComp[lo][0] == a && kComp[lo][1] == b ? kComp[lo][2] : 0;
}

struct Cp {
  uint32_t cp;
  uint32_t ccc;
};

// Appends the full canonical decomposition of cp to *buf (recursive; depth is bounded by the data).
void decompose(uint32_t cp, std::vector<Cp> *buf) {
  if (cp - kSBase < kSCount) {
    const uint32_t s = cp - kSBase;
    buf->push_back({kLBase + s / kNCount, 0});
    buf->push_back({kVBase + (s % kNCount) / kTCount, 0});
    if (s % kTCount != 0) buf->push_back({kTBase + s % kTCount, 0});
    return;
  }
  if (cp >= 0xC0) {
    if (const uint32_t *row = decomp_row(cp)) {
      decompose(row[1], buf);
      if (row[2] != 0) decompose(row[2], buf);
      return;
    }
  }
  buf->push_back({cp, ccc(cp)});
}

void put_utf8(uint32_t cp, std::string *out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | cp >> 12));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | cp >> 18));
    out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Appends NFC of the segment s[a..b) (valid UTF-8) to *out: full canonical decomposition, canonical
// ordering (stable sort of each run of non-starters by ccc), canonical composition. *buf and *tmp are
// scratch. Linear in the segment's length.
void normalize_segment(const char *s, size_t a, size_t b, std::vector<Cp> *buf, std::vector<Cp> *tmp,
                       std::string *out) {
  buf->clear();
  for (size_t i = a; i < b;) {
    uint32_t cp;
    i += static_cast<size_t>(utf8_next(s, b, i, &cp));
    decompose(cp, buf);
  }
  Cp *d = buf->data();
  const size_t n = buf->size();
  // Canonical ordering: runs of ccc != 0 sorted stably by ccc (insertion sort for short runs).
  // (buf already holds decompositions; tmp is separate so the run can be copied back.)
  for (size_t i = 0; i < n;) {
    if (d[i].ccc == 0) { ++i; continue; }
    size_t j = i;
    while (j < n && d[j].ccc != 0) ++j;
    if (j - i > 1) {
      if (j - i <= 16) {
        for (size_t k = i + 1; k < j; ++k) {
          const Cp x = d[k];
          size_t m = k;
          while (m > i && d[m - 1].ccc > x.ccc) { d[m] = d[m - 1]; --m; }
          d[m] = x;
        }
      } else {  // a long run: counting sort by ccc (stable, linear)
        size_t start[257] = {};
        for (size_t k = i; k < j; ++k) ++start[d[k].ccc + 1];
        for (size_t c = 1; c < 257; ++c) start[c] += start[c - 1];
        tmp->resize(j - i);
        for (size_t k = i; k < j; ++k) (*tmp)[start[d[k].ccc]++] = d[k];
        std::copy(tmp->begin(), tmp->end(), d + i);
      }
    }
    i = j;
  }
  // Canonical composition: a character composes with the last starter unless blocked (some
  // character between them has ccc 0 or ccc >= its own). last_ccc 0 = adjacent to the starter;
  // 256 = no starter yet.
  size_t starter = 0, w = 0;
  uint32_t last_ccc = 256;
  for (size_t k = 0; k < n; ++k) {
    const Cp x = d[k];
    if (last_ccc != 256 && (last_ccc == 0 || last_ccc < x.ccc)) {
      if (const uint32_t c = compose(d[starter].cp, x.cp)) {
        d[starter].cp = c;
        continue;
      }
    }
    if (x.ccc == 0) starter = w;
    last_ccc = x.ccc;
    d[w++] = x;
  }
  for (size_t k = 0; k < w; ++k) put_utf8(d[k].cp, out);
}

}  // namespace

Category category(uint32_t cp) { return cp < 256 ? static_cast<Category>(kLatin1.cat[cp]) : category_slow(cp); }

bool is_space(uint32_t cp) {
  if (cp < 0x80) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  for (const auto &r : kWhiteSpace) {
    if (cp < r[0]) return false;
    if (cp <= r[1]) return true;
  }
  return false;
}

int utf8_char_len(const char *s, size_t n) {
  const auto *u = reinterpret_cast<const unsigned char *>(s);
  const unsigned c = n ? u[0] : 0xFF;
  if (c < 0x80) return 1;
  const int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  // The second byte's range rules out overlong forms (E0, F0), surrogates (ED) and > U+10FFFF (F4).
  const unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  if (len == 0 || n < static_cast<size_t>(len) || u[1] < lo || u[1] > hi) return 0;
  for (int k = 2; k < len; ++k)
    if ((u[k] & 0xC0) != 0x80) return 0;
  return len;
}

bool valid_utf8(const char *s, size_t n, size_t *bad_offset) {
  for (size_t i = 0, len; i < n; i += len)
    if ((len = static_cast<size_t>(utf8_char_len(s + i, n - i))) == 0) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
  return true;
}

int utf8_next(const char *s, size_t n, size_t i, uint32_t *cp) {
  const auto *u = reinterpret_cast<const unsigned char *>(s);
  const uint32_t c = u[i];
  const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (len == 1 || i + static_cast<size_t>(len) > n) {  // (the second only on invalid input: never over-reads)
    *cp = c;
    return 1;
  }
  uint32_t v = c & (0x7Fu >> len);
  for (int k = 1; k < len; ++k) v = v << 6 | (u[i + static_cast<size_t>(k)] & 0x3Fu);
  *cp = v;
  return len;
}

ml_status nfc(const char *s, size_t n, std::string *out) {
  try {
    out->clear();
    out->reserve(n);
    std::vector<Cp> buf, tmp;
    size_t copied = 0;  // s[0..copied) is in *out
    size_t seg = 0;     // start of the current segment (its first character is a boundary, or it is 0)
    bool dirty = false; // the current segment holds a non-boundary character
    const auto *u = reinterpret_cast<const unsigned char *>(s);
    auto flush = [&](size_t end) {  // normalizes the dirty segment [seg, end)
      out->append(s + copied, seg - copied);
      normalize_segment(s, seg, end, &buf, &tmp, out);
      copied = end;
      dirty = false;
    };
    for (size_t i = 0; i < n;) {
      if (u[i] < 0x80) {  // an ASCII run: every character a boundary
        if (dirty) flush(i);
        while (i < n && u[i] < 0x80) ++i;
        seg = i - 1;
        continue;
      }
      uint32_t cp;
      const int len = utf8_next(s, n, i, &cp);
      if (nfc_boundary(cp)) {
        if (dirty) flush(i);
        seg = i;
      } else {
        dirty = true;
      }
      i += static_cast<size_t>(len);
    }
    if (dirty) flush(n);
    out->append(s + copied, n - copied);
    return ML_OK;
  } catch (const std::bad_alloc &) {
    out->clear();
    return ML_E_NOMEM;
  }
}

const char *version() { return ML_UNICODE_VERSION; }

}  // namespace ml::unicode
