// ml_tokenize: encode text to token ids (or decode ids to text) with a tokenizer file of either
// kind (docs/tokenizer-format.md), so outside tools can compare ids with their own tokenizers.
// stdout carries only the result; errors go to stderr as one line; the exit status is the
// ml_status of the failure (0 on success).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "native/cli.h"
#include "native/options.h"
#include "runtime/error.h"
#include "runtime/file_map.h"
#include "runtime/ml.h"
#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"

namespace {

const char kUsage[] =
    "usage: ml_tokenize TOKENIZER [-i TEXT | -f FILE | --batch FILE] [--no-bos] [--no-special] [--decode]\n"
    "\n"
    "Encodes UTF-8 text with TOKENIZER, a byte-level BPE file (MLTK, written by tools/convert.py), a\n"
    "llama2.c tokenizer.bin (its vocabulary is the tokens it holds) or a GGUF model (the tokenizer of\n"
    "its metadata), and prints the token ids on one\n"
    "line, separated by spaces (as llama.cpp's llama-tokenize --ids, without brackets).\n";
const char kEpilogue[] =
    "Exit status: 0, or the ml_status code of the failure (1 I/O, 2 format, 4 memory, 6 bad argument,\n"
    "e.g. text that is not valid UTF-8).\n";

struct Args {
  const char *tokenizer = nullptr, *text = nullptr, *file = nullptr, *batch = nullptr;
  bool bos = true, special = true, decode = false, time = false;
};

int fail_status(ml_status s) {
  std::fprintf(stderr, "ml_tokenize: %s\n", ml_last_error());
  return s;
}

int parse_args(int argc, char **argv, Args *a) {
  using namespace ml::cli;
  const Program p{
      "ml_tokenize", kUsage,
      {{"-i, --text", "TEXT", "the text to encode", text(&a->text)},
       {"-f, --file", "FILE", "the text to encode is FILE's bytes (an empty file: no ids but BOS;\n"
                              "llama2.c: no NUL byte in it)", text(&a->file)},
       {"--batch", "FILE", "FILE holds texts separated by NUL bytes (n NULs: n + 1 texts, an empty file\n"
                           "is one empty text); prints one line of ids per text, in order", text(&a->batch)},
       {"--no-bos", nullptr, "do not put BOS first (default: llama2.c always; byte-level when the file's\n"
                             "add_bos flag says so)", flag(&a->bos, false)},
       {"--no-special", nullptr, "byte-level: do not split special tokens (<|im_start|>, ...) out of the text:\n"
                                 "encode them as plain text (added non-special tokens are always split out)",
        flag(&a->special, false)},
       {"--decode", nullptr, "the input is token ids (separated by spaces, commas or newlines) and the\n"
                             "output their text, byte for byte with no newline added; llama2.c: a leading\n"
                             "BOS is skipped. With --batch, each line of FILE is one text's ids and the\n"
                             "texts are printed separated by NUL bytes", flag(&a->decode)},
       {"--time", nullptr, "print the encoding time (wall and CPU) to stderr", flag(&a->time)}},
      [a](const char *v) -> const char * {
        static std::string msg;
        if (a->tokenizer) return (msg = std::string("unexpected argument ") + v).c_str();
        a->tokenizer = v;
        return nullptr;
      },
      kEpilogue};
  if (const int rc = parse(p, argc, argv); rc >= 0) return rc;
  if (!a->tokenizer) return usage_error(p, "no tokenizer given");
  if ((a->text != nullptr) + (a->file != nullptr) + (a->batch != nullptr) != 1)
    return usage_error(p, "give exactly one of -i TEXT, -f FILE, --batch FILE");
  return -1;
}

void append_text(const ml::Tokenizer &tok, const std::vector<int> &ids, std::string *out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (tok.kind() == ml::Tokenizer::kByteLevel) {
      size_t len = 0;
      const char *b = tok.bpe().decode(ids[i], &len);
      out->append(b, len);
    } else {
      if (i == 0 && ids[i] == 1) continue;  // BOS starts the text, it is not part of it
      out->append(tok.decode(i > 0 ? ids[i - 1] : -1, ids[i]));
    }
  }
}

void append_ids(const int *ids, int n, std::string *out) {
  char buf[16];
  for (int i = 0; i < n; ++i) {
    if (i) out->push_back(' ');
    const auto r = std::to_chars(buf, buf + sizeof buf, ids[i]);
    out->append(buf, static_cast<size_t>(r.ptr - buf));
  }
  out->push_back('\n');
}

bool write_out(const std::string &s) {
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "ml_tokenize: writing the output failed: %s\n", std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

extern "C" int ml_main(int argc, char **argv) {
  Args a;
  if (const int rc = parse_args(argc, argv, &a); rc >= 0) return rc;
  try {
    const double t0 = ml::cli::now_ms();
    ml::FileMap f;
    if (const ml_status s = f.open(a.tokenizer, "tokenizer")) return fail_status(s);
    ml::Tokenizer tok;
    if (ml::is_gguf(f.data(), f.size())) {  // a GGUF model: the tokenizer of its metadata
      std::vector<uint8_t> image;
      std::string missing;
      if (const ml_status s = ml::gguf_tokenizer_image(f.data(), f.size(), a.tokenizer, &image, &missing)) return fail_status(s);
      if (image.empty()) {
        std::fprintf(stderr, "ml_tokenize: %s\n", missing.c_str());
        return ML_E_FORMAT;
      }
      if (const ml_status s = tok.load(image.data(), image.size(), 0, a.tokenizer)) return fail_status(s);
    } else if (const ml_status s = tok.load(f.data(), f.size(), 0, a.tokenizer)) {
      return fail_status(s);
    }
    const double t_load = ml::cli::now_ms() - t0;

    // The input texts.
    std::vector<std::string> texts;
    if (a.text) {
      texts.emplace_back(a.text);
    } else {
      std::string all;
      const char *path = a.file ? a.file : a.batch;
      if (const ml_status s = ml::cli::read_file("input", path, &all)) return fail_status(s);
      if (a.batch) {  // texts separated by NUL (n NULs: n + 1 texts); --decode: one text's ids per line
        const char sep = a.decode ? '\n' : '\0';
        for (size_t start = 0; start < all.size() || (!a.decode && start == all.size());) {
          const size_t end = std::min(all.find(sep, start), all.size());
          texts.push_back(all.substr(start, end - start));
          start = end + 1;
        }
      } else {
        const size_t z = all.find('\0');
        if (z != std::string::npos && tok.kind() != ml::Tokenizer::kByteLevel) {
          std::fprintf(stderr, "ml_tokenize: -f %s: byte %zu is NUL; a text cannot hold NUL (--batch separates texts by NUL)\n",
                       path, z);
          return ML_E_ARG;
        }
        texts.push_back(std::move(all));
      }
    }

    std::string out;
    if (a.decode) {
      std::vector<int> ids;
      for (size_t t = 0; t < texts.size(); ++t) {
        const std::string &s = texts[t];  // ids separated by spaces, tabs, commas, newlines; [ ] ignored
        if (!ml::cli::parse_token_ids("ml_tokenize: --decode", s.c_str(), s.c_str() + s.size(), " ,\t\n\r[]",
                                      tok.vocab(), &ids))
          return ML_E_ARG;
        if (a.batch && t > 0) out.push_back('\0');
        append_text(tok, ids, &out);
      }
      return write_out(out) ? 0 : ML_E_IO;
    }

    std::vector<int> ids;
    ml::BpeTokenizer &bpe = tok.bpe_mut();
    size_t bytes = 0, n_total = 0;
    const double t1 = ml::cli::now_ms();
    const std::clock_t c1 = std::clock();
    for (size_t t = 0; t < texts.size(); ++t) {
      const std::string &text = texts[t];
      int n = 0;
      ml::clear_error();
      ml_status s;
      if (tok.kind() == ml::Tokenizer::kByteLevel) {  // the text may hold NUL bytes (-f)
        s = bpe.encode(text.c_str(), text.size(), a.bos, a.special, &ids);
        n = static_cast<int>(ids.size());
      } else {
        ids.resize(tok.max_tokens(text.size()));
        s = tok.encode(text.c_str(), a.bos, a.special, ids.data(), static_cast<int>(ids.size()), &n);
      }
      if (s != ML_OK) {
        if (texts.size() > 1) {
          std::fprintf(stderr, "ml_tokenize: --batch text %zu: %s\n", t + 1, ml_last_error());
          return s;
        }
        return fail_status(s);
      }
      append_ids(ids.data(), n, &out);
      bytes += text.size();
      n_total += static_cast<size_t>(n);
    }
    const double t_enc = ml::cli::now_ms() - t1;
    const double c_enc = double(std::clock() - c1) * 1000.0 / CLOCKS_PER_SEC;  // CPU time: shared machines
    if (!write_out(out)) return ML_E_IO;
    if (a.time)
      std::fprintf(stderr, "ml_tokenize: loaded %s in %.1f ms; encoded %zu bytes in %zu text%s to %zu tokens in %.1f ms, "
                   "%.1f ms of CPU (%.2f MB/s of CPU)\n",
                   a.tokenizer, t_load, bytes, texts.size(), texts.size() == 1 ? "" : "s", n_total, t_enc, c_enc,
                   c_enc > 0 ? bytes / c_enc / 1000.0 : 0.0);
    return 0;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "ml_tokenize: out of memory\n");
    return ML_E_NOMEM;
  }
}
