// One option parser for the programs (ml_run, ml_tokenize, ml_bench, ml_server): each lists its
// options once, in a table of {names, argument, help, what to do with the value}, and gets from it
// both its --help text and its errors. Contract:
//   - parse() returns -1 when the program should run, 0 after printing --help (stdout), or
//     ML_E_ARG after printing one line on stderr that names the option: "PROG: unknown option X",
//     "PROG: option X needs a value", "PROG: X VALUE: <why the value is bad>", each ending with
//     "(PROG --help for usage)".
//   - An option's setter gets the value (nullptr for a flag) and returns nullptr when it took it,
//     else the reason it did not ("must be an integer in [1, 1024]").
//   - Arguments that do not start with '-' (and "-" alone) go to the program's positional setter.
//   - Help: "usage" text, then "options:" with one entry per row (names and argument in a column of
//     20, the help's lines after it, continuation lines indented to match), then "-h, --help", then
//     the epilogue.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hub/hub.h"
#include "native/cli.h"
#include "runtime/ml.h"

namespace ml::cli {

using Setter = std::function<const char *(const char *value)>;

struct Option {
  const char *names;  // "-z, --tokenizer" or "--temp": the spellings, comma-separated
  const char *arg;    // the value's name in --help ("PATH"), nullptr for a flag
  const char *help;   // lines separated by '\n'
  Setter set;
};

struct Program {
  const char *name;      // "ml_run"
  const char *usage;     // --help's text before the options
  std::vector<Option> options;
  Setter positional;     // takes an argument that is not an option; nullptr: none accepted
  const char *epilogue = "";  // --help's text after the options
};

// ---- setters for the usual kinds of value
inline Setter flag(bool *dst, bool value = true) {
  return [=](const char *) -> const char * { *dst = value; return nullptr; };
}
inline Setter text(const char **dst) {
  return [=](const char *v) -> const char * { *dst = v; return nullptr; };
}
// An integer in [lo, hi]; `why` replaces the generated reason when given.
inline Setter integer(long *dst, long lo, long hi, const char *why = nullptr) {
  return [=](const char *v) -> const char * {
    static thread_local char msg[96];
    if (parse_int(v, lo, hi, dst)) return nullptr;
    if (why) return why;
    if (hi >= (1L << 30)) std::snprintf(msg, sizeof msg, "must be an integer >= %ld", lo);
    else std::snprintf(msg, sizeof msg, "must be an integer in [%ld, %ld]", lo, hi);
    return msg;
  };
}
inline Setter kv_type(int *dst) {
  return [=](const char *v) -> const char * {
    return ml_kv_type_parse(v, dst) == ML_OK ? nullptr : "choose f32, f16 or q8_0";
  };
}

inline void append_rows(Program *p, std::vector<Option> rows) {
  p->options.insert(p->options.end(), rows.begin(), rows.end());
}

// The --hf rows (hub/hub.h), the same in every program that opens a model.
inline std::vector<Option> hub_options(ml::hub::Options *o) {
  auto str = [](std::string *dst) -> Setter { return [=](const char *v) -> const char * { return *dst = v, nullptr; }; };
  return {
      {"--hf", "ORG/REPO[:QUANT]",
       "a GGUF from the Hugging Face hub, downloaded into the cache and run\n"
       "(e.g. --hf Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m). QUANT picks the file\n"
       "whose name holds it, in any case; without one, the first the repository has\n"
       "of " ML_HUB_DEFAULT_QUANTS "\n"
       "(else its first GGUF). Split files (-00001-of-0000N) are refused.\n"
       "A file in the cache is used without the network. Cache: $ML_CACHE, else\n"
       "$XDG_CACHE_HOME/legacy-ml or ~/.cache/legacy-ml (Windows:\n"
       "%LOCALAPPDATA%\\legacy-ml). Downloads: " ML_HUB_TRANSPORT, str(&o->spec)},
      {"--hf-file", "NAME", "with --hf: this file of the repository instead of a quant", str(&o->file)},
      {"--hf-token", "TOKEN", "for gated or private repositories (default: $HF_TOKEN); sent as\n"
                              "Authorization: Bearer to the hub's host only, never printed", str(&o->token)},
      {"--hf-endpoint", "URL", "the hub or a mirror (default: $HF_ENDPOINT, else https://huggingface.co)",
       str(&o->endpoint)},
      {"--offline", nullptr, "with --hf: the cache only, never the network (also HF_HUB_OFFLINE=1)",
       flag(&o->offline)}};
}

// ---- the parser
inline bool option_matches(const char *names, const char *arg) {
  const size_t n = std::strlen(arg);
  for (const char *p = names; *p;) {
    while (*p == ' ' || *p == ',') ++p;
    const char *e = p;
    while (*e && *e != ',' && *e != ' ') ++e;
    if (static_cast<size_t>(e - p) == n && !std::strncmp(p, arg, n)) return true;
    p = e;
  }
  return false;
}

inline void print_help(const Program &p) {
  std::fputs(p.usage, stdout);
  std::fputs("\noptions:\n", stdout);
  auto row = [](const char *names, const char *arg, const char *help) {
    std::string left = names[1] == '-' ? std::string("    ") + names : names;  // long-only: align with "-x, "
    if (arg) left += std::string(" ") + arg;
    std::string out = "  " + left;
    const std::string indent(24, ' ');
    out += out.size() < 24 ? std::string(std::max<size_t>(24 - out.size(), 1), ' ') : "\n" + indent;
    for (const char *h = help; *h; ++h) out += *h == '\n' ? "\n" + indent : std::string(1, *h);
    std::puts(out.c_str());
  };
  for (const Option &o : p.options) row(o.names, o.arg, o.help);
  row("-h, --help", nullptr, "this text");
  if (*p.epilogue) std::printf("\n%s", p.epilogue);
}

inline int usage_error(const Program &p, const char *fmt, const char *a = "", const char *b = "") {
  std::fprintf(stderr, "%s: ", p.name);
  std::fprintf(stderr, fmt, a, b);
  std::fprintf(stderr, " (%s --help for usage)\n", p.name);
  return ML_E_ARG;
}

inline int parse(const Program &p, int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == '\0') {
      if (!p.positional) return usage_error(p, "unexpected argument %s", a);
      if (const char *why = p.positional(a)) return usage_error(p, "%s", why);
      continue;
    }
    if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
      print_help(p);
      return 0;
    }
    const Option *o = nullptr;
    for (const Option &c : p.options)
      if (option_matches(c.names, a)) o = &c;
    if (!o) return usage_error(p, "unknown option %s", a);
    const char *v = nullptr;
    if (o->arg) {
      if (i + 1 >= argc) return usage_error(p, "option %s needs a value", a);
      v = argv[++i];
    }
    if (const char *why = o->set(v)) {
      const std::string what = v ? std::string(a) + " " + v : std::string(a);
      return usage_error(p, "%s: %s", what.c_str(), why);
    }
  }
  return -1;
}

}  // namespace ml::cli
