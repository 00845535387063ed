// hub/hub.h: a GGUF by repository name. The hub's endpoints used (docs/hub.md):
//   GET {endpoint}/api/models/{org}/{repo}/tree/{revision}?recursive=true
//       JSON array of {type, path, size, oid, lfs: {oid, size}}; further pages through the
//       `Link: <url>; rel="next"` header
//   GET {endpoint}/{org}/{repo}/resolve/{revision}/{file}
//       302 to the bytes (X-Linked-Etag: the LFS sha256, X-Linked-Size), which answer Range
//       requests with 206
// Cache (cache_root()): hub/{org}/{repo}/{revision}/listing.json and .../files/{file}, the file
// renamed there from files/{file}.part only after its size and SHA-256 matched.
#include "hub/hub.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <io.h>
#include <windows.h>
#else
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#endif

#include "hub/http.h"
#include "hub/sha256.h"
#include "runtime/file_map.h"
#include "runtime/ml.h"

namespace ml::hub {
namespace {

using nlohmann::json;

constexpr const char *kRevision = "main";
constexpr int kAttempts = 5;  // tries of one transfer that broke off (resuming), with backoff

// ---- Platform: environment, sizes, free space, terminal, folders (UTF-8 paths everywhere).


std::string env(const char *name) {
#if defined(_WIN32)
  const wchar_t *v = _wgetenv(wide(name).c_str());
  return v ? narrow(v) : std::string();
#else
  const char *v = std::getenv(name);
  return v ? std::string(v) : std::string();
#endif
}

// The size of a regular file, or -1 when there is none.
int64_t file_size(const std::string &path) {
#if defined(_WIN32)
  WIN32_FILE_ATTRIBUTE_DATA d;
  if (!GetFileAttributesExW(wide(path).c_str(), GetFileExInfoStandard, &d)) return -1;
  if (d.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) return -1;
  return int64_t(uint64_t(d.nFileSizeHigh) << 32 | d.nFileSizeLow);
#else
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return int64_t(st.st_size);
#endif
}

// Bytes free for this user in the folder `dir`, or -1 when unknown.
int64_t free_bytes(const std::string &dir) {
#if defined(_WIN32)
  ULARGE_INTEGER avail;
  if (!GetDiskFreeSpaceExW(wide(dir).c_str(), &avail, nullptr, nullptr)) return -1;
  return int64_t(avail.QuadPart);
#else
  struct statvfs s;
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return int64_t(uint64_t(s.f_bavail) * uint64_t(s.f_frsize));
#endif
}

bool stderr_is_terminal() {
#if defined(_WIN32)
  return _isatty(_fileno(stderr)) != 0;
#else
  return isatty(STDERR_FILENO) != 0;
#endif
}

// Creates `path` and every missing folder above it. False when one cannot be made.
bool make_dirs(const std::string &path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/' && path[i] != '\\') continue;
    const std::string part = path.substr(0, i);
    if (part.size() == 2 && part[1] == ':') continue;  // a drive, "C:"
    if (make_dir_utf8(part.c_str()) != 0) {
      PathInfo info;
      if (!path_info(part.c_str(), &info) || !info.is_dir) return false;
    }
  }
  return true;
}

std::string parent_of(const std::string &path) {
  const size_t s = path.find_last_of("/\\");
  return s == std::string::npos ? std::string(".") : path.substr(0, s);
}

std::string mb(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", double(bytes) / 1e6);
  return b;
}

std::string lower(std::string s) {
  for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string &s, const char *tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ---- Names.

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

// ORG/REPO: letters, digits, - _ . in each part, no "." or ".." part.
bool valid_repo(const std::string &r) {
  const size_t slash = r.find('/');
  if (slash == std::string::npos || r.find('/', slash + 1) != std::string::npos) return false;
  const std::string parts[2] = {r.substr(0, slash), r.substr(slash + 1)};
  for (const std::string &p : parts) {
    if (p.empty() || p == "." || p == ".." || p.size() > 96) return false;
    for (char c : p)
      if (!name_char(c)) return false;
  }
  return true;
}

// A file path of the listing that is safe to place under the cache folder on Linux and Windows.
bool safe_path(const std::string &p) {
  if (p.empty() || p.size() > 400 || p[0] == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    const std::string seg = p.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == ".." || seg.back() == '.' || seg.back() == ' ') return false;
    for (unsigned char c : seg)
      if (c < 0x20 || std::strchr("\\:*?\"<>|", c)) return false;
    start = end + 1;
  }
  return true;
}

// Percent-encodes a path for a URL (keeps '/' and RFC 3986's unreserved characters).
std::string url_path(const std::string &p) {
  std::string out;
  for (unsigned char c : p) {
    if (std::isalnum(c) || std::strchr("-._~/", c)) {
      out += char(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

// "-00001-of-00003.gguf" at the end of a name: one part of a split GGUF.
bool is_split(const std::string &name) {
  const std::string n = lower(name);
  if (!ends_with(n, ".gguf") || n.size() < 5 + 15) return false;
  const std::string u = n.substr(n.size() - 5 - 15, 15);  // -ddddd-of-ddddd
  if (u[0] != '-' || u.compare(6, 4, "-of-") != 0) return false;
  for (int i : {1, 2, 3, 4, 5, 10, 11, 12, 13, 14})
    if (!std::isdigit(static_cast<unsigned char>(u[size_t(i)]))) return false;
  return true;
}

// The base name holds `quant` as a whole token: not preceded by a letter or digit, not followed by
// a letter, digit or '_' (so Q4_K does not match Q4_K_M), compared in any case.
bool has_quant(const std::string &path, const std::string &quant) {
  const size_t slash = path.rfind('/');
  const std::string base = lower(slash == std::string::npos ? path : path.substr(slash + 1));
  const std::string q = lower(quant);
  for (size_t at = base.find(q); at != std::string::npos; at = base.find(q, at + 1)) {
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(base[at - 1]));
    const size_t e = at + q.size();
    const bool right = e >= base.size() || !(std::isalnum(static_cast<unsigned char>(base[e])) || base[e] == '_');
    if (left && right) return true;
  }
  return false;
}

// ---- The listing.

struct Entry {
  std::string path, sha256;  // sha256: the LFS object id (lowercase hex), "" when not in LFS
  uint64_t size = 0;
};

bool parse_listing(const std::string &text, std::vector<Entry> *out, std::string *error) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_array()) {
    *error = "is not a JSON array of files";
    return false;
  }
  for (const json &e : j) {
    // (a hostile listing: any member may be of another type; nothing here may throw)
    if (!e.is_object() || !e.contains("type") || e["type"] != "file" || !e.contains("path") || !e["path"].is_string())
      continue;
    Entry x;
    x.path = e["path"].get<std::string>();
    if (e.contains("size") && e["size"].is_number_unsigned()) x.size = e["size"].get<uint64_t>();
    if (e.contains("lfs") && e["lfs"].is_object()) {
      const json &l = e["lfs"];
      if (l.contains("oid") && l["oid"].is_string()) {
        x.sha256 = lower(l["oid"].get<std::string>());
        if (x.sha256.rfind("sha256:", 0) == 0) x.sha256 = x.sha256.substr(7);
      }
      if (l.contains("size") && l["size"].is_number_unsigned()) x.size = l["size"].get<uint64_t>();
    }
    out->push_back(x);
  }
  return true;
}

bool is_gguf(const Entry &e) {
  const size_t slash = e.path.rfind('/');
  const std::string base = lower(slash == std::string::npos ? e.path : e.path.substr(slash + 1));
  return ends_with(base, ".gguf") && base.rfind("mmproj", 0) != 0;  // vision projectors are not models
}

std::string gguf_names(const std::vector<Entry> &files) {
  std::string s;
  int n = 0;
  for (const Entry &e : files)
    if (is_gguf(e)) {
      if (++n > 24) {
        s += ", ...";
        break;
      }
      s += (s.empty() ? "" : ", ") + e.path;
    }
  return s.empty() ? std::string("none") : s;
}

// The file for `quant` (or the default order), or nullptr with *error.
const Entry *pick(const std::vector<Entry> &files, const std::string &repo, const std::string &quant,
                  std::string *error, int *status) {
  *status = ML_E_ARG;
  std::vector<const Entry *> gguf;
  for (const Entry &e : files)
    if (is_gguf(e)) gguf.push_back(&e);
  std::sort(gguf.begin(), gguf.end(), [](const Entry *a, const Entry *b) { return a->path < b->path; });
  if (gguf.empty()) {
    *error = repo + " has no GGUF file (revision " + kRevision + ")";
    return nullptr;
  }
  auto for_quant = [&](const std::string &q, const Entry **split) -> const Entry * {
    for (const Entry *e : gguf)
      if (has_quant(e->path, q)) {
        if (!is_split(e->path)) return e;
        if (!*split) *split = e;
      }
    return nullptr;
  };
  const Entry *split = nullptr;
  if (!quant.empty()) {
    if (const Entry *e = for_quant(quant, &split)) return e;
    if (split)
      *error = repo + ": the " + quant + " file " + split->path +
               " is one part of a split GGUF, which this runtime does not read (merge the parts with "
               "llama-gguf-split --merge and run the file, or choose another quant)";
    else
      *error = repo + " has no GGUF file for quant " + quant + "; its GGUF files: " + gguf_names(files);
    return nullptr;
  }
  const std::string order = ML_HUB_DEFAULT_QUANTS;
  size_t start = 0;
  while (start < order.size()) {
    size_t end = order.find(' ', start);
    if (end == std::string::npos) end = order.size();
    if (const Entry *e = for_quant(order.substr(start, end - start), &split)) return e;
    start = end + 1;
  }
  for (const Entry *e : gguf)
    if (!is_split(e->path)) return e;
  *error = repo + ": every GGUF file is one part of a split GGUF (" + gguf[0]->path +
           "), which this runtime does not read (merge the parts with llama-gguf-split --merge)";
  return nullptr;
}

// ---- HTTP with the hub's conventions.

struct Hub {
  std::string endpoint, repo, token;
  const char *prog = "";

  std::string origin_of(const std::string &url) const {
    const size_t b = url.find("://");
    const size_t e = url.find('/', b == std::string::npos ? 0 : b + 3);
    return e == std::string::npos ? url : url.substr(0, e);
  }
  std::string absolute(const std::string &base, const std::string &loc) const {
    if (loc.find("://") != std::string::npos) return loc;
    if (loc.rfind("//", 0) == 0) return base.substr(0, base.find(':') + 1) + loc;
    if (!loc.empty() && loc[0] == '/') return origin_of(base) + loc;
    const size_t q = base.find('?');
    const std::string b = base.substr(0, q);
    return b.substr(0, b.rfind('/') + 1) + loc;
  }

  // One GET following up to 8 redirects; Authorization only to the endpoint's own origin. The
  // first answer's X-Linked-* headers are kept in *linked_etag / *linked_size.
  HttpFailure get(const std::string &url, HttpRequest req, HttpResponse *resp, std::string *error,
                  std::string *linked_etag = nullptr, std::string *linked_size = nullptr) const {
    std::string at = url;
    const auto base_headers = req.headers;
    for (int hop = 0; hop < 8; ++hop) {
      req.url = at;
      req.headers = base_headers;
      if (!token.empty() && origin_of(at) == origin_of(endpoint))
        req.headers.emplace_back("Authorization", "Bearer " + token);
      const HttpFailure f = http_get(req, resp, error);
      if (f != HttpFailure::kNone) return f;
      if (linked_etag && linked_etag->empty()) *linked_etag = resp->header("x-linked-etag");
      if (linked_size && linked_size->empty()) *linked_size = resp->header("x-linked-size");
      if (resp->status < 300 || resp->status >= 400 || resp->status == 304) return f;
      const std::string loc = resp->header("location");
      if (loc.empty()) return f;
      at = absolute(at, loc);
    }
    *error = "too many redirects from " + url;
    return HttpFailure::kTransfer;
  }

  // One line for an HTTP error answer about `what` (the repository or one of its files).
  std::string http_error(int status, const std::string &what) const {
    char code[16];
    std::snprintf(code, sizeof code, "%d", status);
    if (status == 401 || status == 403)
      return what + ": access denied (HTTP " + code + "): " +
             (token.empty() ? "a gated or private repository needs a token: set HF_TOKEN or pass --hf-token "
                              "(a repository that does not exist answers so too)"
                            : "the token was refused or has no access to " + repo +
                                  " (for a gated model, accept its terms on the hub's page first)");
    if (status == 404) return what + ": not found at " + endpoint + " (HTTP 404)";
    if (status == 429) return what + ": the hub says too many requests (HTTP 429); try again later";
    return what + ": the hub answered HTTP " + code;
  }
};

// ---- Progress on stderr: a live line on a terminal, else one line at the start and one at the end.
struct Progress {
  const char *prog;
  std::string name;
  uint64_t total = 0, done = 0, resumed_at = 0;
  double t0 = now_s(), last = 0;
  bool tty = stderr_is_terminal();

  void update(bool force = false) {
    if (!tty) return;
    const double t = now_s();
    if (!force && (t - last < 0.25 || t - t0 < 0.5)) return;  // a rate needs some time to mean anything
    last = t;
    const double rate = t > t0 ? double(done - resumed_at) / (t - t0) : 0.0;
    char eta[32] = "--:--";
    if (total && done >= total) {
      std::snprintf(eta, sizeof eta, "0:00");
    } else if (rate > 0 && total > done) {
      const long s = long(double(total - done) / rate);
      std::snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
    }
    std::fprintf(stderr, "\r%s: %s  %s / %s (%3d%%)  %.2f MB/s  ETA %s   ", prog, name.c_str(), mb(done).c_str(),
                 mb(total).c_str(), total ? int(100.0 * double(done) / double(total)) : 0, rate / 1e6, eta);
    std::fflush(stderr);
  }
  void end_line() {
    if (tty && last > 0) std::fputc('\n', stderr);
    last = 0;
  }
};

int fail(std::string *error, const std::string &line, int status = ML_E_IO) {
  *error = line;
  return status;
}

// Fetches the listing (every page). 0, or a status with *error.
int fetch_listing(const Hub &hub, std::string *text, std::string *error) {
  json all = json::array();
  std::string url = hub.endpoint + "/api/models/" + hub.repo + "/tree/" + kRevision + "?recursive=true";
  for (int page = 0; page < 1000 && !url.empty(); ++page) {
    HttpResponse resp;
    HttpFailure f = HttpFailure::kNone;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      HttpRequest req;
      req.headers.emplace_back("Accept", "application/json");
      f = hub.get(url, req, &resp, error);
      const bool again = f == HttpFailure::kTransfer || (f == HttpFailure::kNone && resp.status >= 500);
      if (!again || attempt == kAttempts) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250 << attempt));
    }
    if (f == HttpFailure::kNoDownloader) return fail(error, "--hf " + hub.repo + ": " + *error);
    if (f != HttpFailure::kNone) return fail(error, "listing the files of " + hub.repo + ": " + *error);
    if (resp.status != 200) return fail(error, hub.http_error(resp.status, hub.repo));
    const json j = json::parse(resp.body, nullptr, false);
    if (!j.is_array())
      return fail(error, hub.repo + ": the file listing from " + hub.endpoint + " is not a JSON array", ML_E_FORMAT);
    for (const json &e : j) all.push_back(e);
    // Link: <https://...>; rel="next"
    url.clear();
    const std::string link = resp.header("link");
    const size_t rel = link.find("rel=\"next\"");
    if (rel != std::string::npos) {
      const size_t lt = link.rfind('<', rel), gt = link.find('>', lt == std::string::npos ? 0 : lt);
      if (lt != std::string::npos && gt != std::string::npos && gt < rel) url = hub.absolute(hub.endpoint + "/", link.substr(lt + 1, gt - lt - 1));
    }
  }
  *text = all.dump(1);
  return 0;
}

bool write_file_atomic(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp";
  std::FILE *f = fopen_utf8(tmp.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok || rename_replace(tmp.c_str(), path.c_str()) != 0) {
    remove_utf8(tmp.c_str());
    return false;
  }
  return true;
}

bool read_file(const std::string &path, std::string *text) {
  std::FILE *f = fopen_utf8(path.c_str(), "rb");
  if (!f) return false;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text->append(buf, n);
  std::fclose(f);
  return true;
}

std::string sha256_of_file(const std::string &path) {
  std::FILE *f = fopen_utf8(path.c_str(), "rb");
  if (!f) return std::string();
  Sha256 h;
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  const bool bad = std::ferror(f) != 0;
  std::fclose(f);
  return bad ? std::string() : h.hex();
}

bool is_hex64(const std::string &s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Downloads `e` to `dest` through dest.part: resumed, retried, verified, renamed. 0 or a status.
int download(const Hub &hub, const Entry &e, const std::string &dest, std::string *error) {
  const std::string part = dest + ".part";
  const std::string dir = parent_of(dest);
  if (!make_dirs(dir)) return fail(error, "cannot create the cache folder " + dir);
  const std::string url = hub.endpoint + "/" + hub.repo + "/resolve/" + kRevision + "/" + url_path(e.path);
  std::string want_sha = e.sha256;
  uint64_t want_size = e.size;
  Progress pr{hub.prog, e.path};
  pr.total = want_size;
  bool announced = false;
  const double t_start = now_s();
  for (int attempt = 1;; ++attempt) {
    int64_t have = file_size(part);
    if (have < 0) have = 0;
    if (want_size && uint64_t(have) > want_size) {  // longer than the file: not a prefix of it
      remove_utf8(part.c_str());
      have = 0;
    }
    if (!want_size || uint64_t(have) < want_size) {
      const int64_t avail = free_bytes(dir);
      const uint64_t need = want_size ? want_size - uint64_t(have) : 0;
      if (avail >= 0 && need > 0 && uint64_t(avail) < need + (16u << 20))
        return fail(error, "not enough free disk space in " + dir + " for " + e.path + ": it needs " + mb(need) +
                               " more, " + mb(uint64_t(avail)) + " are free");
      if (!announced) {
        std::fprintf(stderr, "%s: downloading %s %s (%s) into %s%s\n", hub.prog, hub.repo.c_str(), e.path.c_str(),
                     want_size ? mb(want_size).c_str() : "size unknown", dir.c_str(),
                     have ? (", resuming at " + mb(uint64_t(have))).c_str() : "");
        announced = true;
      }
      HttpRequest req;
      if (have) req.headers.emplace_back("Range", "bytes=" + std::to_string(have) + "-");
      bool write_failed = false, restart = false;
      pr.done = pr.resumed_at = uint64_t(have);
      pr.t0 = now_s();
      const bool asked_range = have > 0;
      HttpResponse resp;
      // The .part is opened at the first body byte of a 2xx answer (an error answer leaves no file),
      // which also tells what the server did with the Range: 206 from `have` appends; 200 is the
      // whole file again, written from the start.
      std::FILE *f = nullptr;
      req.sink = [&](const char *d, size_t n) {
        if (!f) {
          bool append = false;
          if (asked_range && resp.status == 206) {
            const std::string cr = resp.header("content-range");  // bytes START-END/TOTAL
            unsigned long long s = 0;
            if (std::sscanf(cr.c_str(), "bytes %llu-", &s) != 1 || s != uint64_t(have)) {
              restart = true;  // not the bytes asked for: start over
              return false;
            }
            append = true;
          }
          if (!append) pr.done = pr.resumed_at = 0;
          f = fopen_utf8(part.c_str(), append ? "ab" : "wb");
          if (!f) {
            write_failed = true;
            return false;
          }
        }
        if (std::fwrite(d, 1, n, f) != n) {
          write_failed = true;
          return false;
        }
        pr.done += n;
        pr.update();
        return true;
      };
      std::string linked_etag, linked_size, terr;
      const HttpFailure hf = hub.get(url, req, &resp, &terr, &linked_etag, &linked_size);
      bool closed_ok = !f || std::fclose(f) == 0;
      if (!f && hf == HttpFailure::kNone && resp.status >= 200 && resp.status < 300 && resp.status != 206) {
        f = fopen_utf8(part.c_str(), "wb");  // an empty body: an empty file
        closed_ok = f && std::fclose(f) == 0;
      }
      pr.update(true);
      pr.end_line();
      if (write_failed || !closed_ok) return fail(error, "cannot write " + part + " (is the disk full?)");
      if (hf == HttpFailure::kNoDownloader) return fail(error, "--hf " + hub.repo + ": " + terr);
      // The hub's own checksum (the LFS sha256, quoted) and size from the redirect's headers.
      if (!linked_etag.empty()) {
        std::string t = lower(linked_etag);
        if (t.rfind("w/", 0) == 0) t = t.substr(2);
        t.erase(std::remove(t.begin(), t.end(), '"'), t.end());
        if (is_hex64(t)) {
          if (!want_sha.empty() && t != want_sha) {
            remove_utf8(part.c_str());
            return fail(error, hub.repo + " " + e.path + ": the listing's SHA-256 " + want_sha +
                                   " and the download's X-Linked-Etag " + t + " disagree; nothing was kept");
          }
          want_sha = t;
        }
      }
      if (!linked_size.empty() && !want_size) {
        want_size = std::strtoull(linked_size.c_str(), nullptr, 10);
        pr.total = want_size;
      }
      if (restart) {
        remove_utf8(part.c_str());
        terr = "the server resumed at another offset than asked";
      } else if (hf == HttpFailure::kConnect && attempt == 1) {
        return fail(error, "cannot download " + hub.repo + " " + e.path + ": " + terr);
      } else if (hf == HttpFailure::kNone) {
        if (resp.status == 416) {  // the range starts at or past the end: the part may be whole
          if (want_size && uint64_t(have) == want_size) break;
          remove_utf8(part.c_str());
          terr = "the server refused to resume at " + std::to_string(have) + " bytes (HTTP 416)";
        } else if (resp.status >= 200 && resp.status < 300) {
          if (!want_size || uint64_t(file_size(part)) >= want_size) break;
          terr = "the answer ended early";  // fewer bytes than the size: resume
        } else if (resp.status < 500 && resp.status != 429) {
          return fail(error, hub.http_error(resp.status, hub.repo + " " + e.path));
        } else {
          terr = hub.http_error(resp.status, hub.repo + " " + e.path);
        }
      }
      if (attempt >= kAttempts)
        return fail(error, "downloading " + hub.repo + " " + e.path + " failed " + std::to_string(kAttempts) +
                               " times: " + terr + " (" + part + " is kept: the next run resumes it)");
      const int wait_ms = 250 << attempt;  // 0.5 s, 1 s, 2 s, 4 s
      const int64_t kept = file_size(part);
      std::fprintf(stderr, "%s: %s; trying again in %.1f s (attempt %d of %d)%s\n", hub.prog, terr.c_str(),
                   wait_ms / 1000.0, attempt + 1, kAttempts,
                   kept > 0 ? (", resuming at " + mb(uint64_t(kept))).c_str() : "");
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
      continue;
    }
    break;  // the part is whole already
  }
  // Verify, then rename into place.
  const int64_t got = file_size(part);
  if (want_size && uint64_t(got) != want_size) {
    remove_utf8(part.c_str());
    return fail(error, hub.repo + " " + e.path + ": got " + std::to_string(got) + " bytes, the hub says " +
                           std::to_string(want_size) + "; the download was deleted");
  }
  if (!want_sha.empty()) {
    const std::string sha = sha256_of_file(part);
    if (sha != want_sha) {
      remove_utf8(part.c_str());
      return fail(error, hub.repo + " " + e.path + ": SHA-256 mismatch (got " + (sha.empty() ? "unreadable" : sha) +
                             ", the hub says " + want_sha + "); the download was deleted");
    }
  }
  if (rename_replace(part.c_str(), dest.c_str()) != 0) return fail(error, "cannot rename " + part + " to " + dest);
  const double secs = now_s() - t_start;
  std::fprintf(stderr, "%s: downloaded %s (%s in %.1f s, %.2f MB/s)%s\n", hub.prog, e.path.c_str(),
               mb(uint64_t(got)).c_str(), secs, secs > 0 ? double(got) / 1e6 / secs : 0.0,
               want_sha.empty() ? "; the hub gave no SHA-256 to check" : ", SHA-256 verified");
  return 0;
}

}  // namespace

std::string cache_root() {
  std::string root = env("ML_CACHE");
  if (!root.empty()) return root;
#if defined(_WIN32)
  root = env("LOCALAPPDATA");
  if (root.empty()) root = env("USERPROFILE").empty() ? std::string(".") : env("USERPROFILE") + "\\AppData\\Local";
  return root + "\\legacy-ml";
#else
  root = env("XDG_CACHE_HOME");
  if (root.empty() || root[0] != '/') root = env("HOME").empty() ? std::string("/tmp") : env("HOME") + "/.cache";
  return root + "/legacy-ml";
#endif
}

int resolve(const Options &o, const char *prog, std::string *path, std::string *error) {
  if (o.spec.empty()) return fail(error, "--hf-file " + o.file + " needs --hf ORG/REPO", ML_E_ARG);
  const size_t colon = o.spec.find(':');
  const std::string repo = o.spec.substr(0, colon);
  const std::string quant = colon == std::string::npos ? std::string() : o.spec.substr(colon + 1);
  if (!valid_repo(repo))
    return fail(error, "--hf " + o.spec + ": not a repository name ORG/REPO[:QUANT] (letters, digits, - _ .)", ML_E_ARG);
  if (colon != std::string::npos) {
    bool ok = !quant.empty();
    for (char c : quant) ok = ok && name_char(c);
    if (!ok) return fail(error, "--hf " + o.spec + ": the quant after ':' must be a name like Q4_K_M", ML_E_ARG);
    if (!o.file.empty()) return fail(error, "give either --hf ORG/REPO:QUANT or --hf-file, not both", ML_E_ARG);
  }
  if (!o.file.empty() && !safe_path(o.file))
    return fail(error, "--hf-file " + o.file + ": not a file name of a repository", ML_E_ARG);
  Hub hub;
  hub.repo = repo;
  hub.prog = prog;
  hub.endpoint = !o.endpoint.empty() ? o.endpoint : env("HF_ENDPOINT");
  if (hub.endpoint.empty()) hub.endpoint = "https://huggingface.co";
  while (!hub.endpoint.empty() && hub.endpoint.back() == '/') hub.endpoint.pop_back();
  if (hub.endpoint.rfind("http://", 0) != 0 && hub.endpoint.rfind("https://", 0) != 0)
    return fail(error, "--hf-endpoint " + hub.endpoint + ": not an http:// or https:// URL", ML_E_ARG);
  hub.token = !o.token.empty() ? o.token : env("HF_TOKEN");
  const std::string off = env("HF_HUB_OFFLINE");
  const bool offline = o.offline || (!off.empty() && off != "0" && lower(off) != "false");

  const std::string dir = cache_root() + "/hub/" + repo + "/" + kRevision;
  const std::string listing_path = dir + "/listing.json";
  auto local = [&](const std::string &file) { return dir + "/files/" + file; };

  // From the cache, without the network.
  if (!o.file.empty() && file_size(local(o.file)) >= 0) {
    *path = local(o.file);
    return 0;
  }
  std::vector<Entry> files;
  std::string text, perr;
  int st = 0;
  if (o.file.empty() && read_file(listing_path, &text)) {
    if (!parse_listing(text, &files, &perr)) return fail(error, listing_path + ": " + perr + " (delete it)", ML_E_FORMAT);
    const Entry *e = pick(files, repo, quant, error, &st);
    if (e && file_size(local(e->path)) >= 0) {
      *path = local(e->path);
      return 0;
    }
    if (offline) {
      if (!e) return st;
      return fail(error, "--offline: " + repo + " " + e->path + " is not in the cache (" + local(e->path) + ")");
    }
  }
  if (offline) {
    if (!o.file.empty()) return fail(error, "--offline: " + repo + " " + o.file + " is not in the cache (" + local(o.file) + ")");
    return fail(error, "--offline: no file listing of " + repo + " in the cache (" + listing_path +
                           "): run once without --offline");
  }

  // From the hub: the listing (kept next to the files), the choice, the download.
  if (const int s = fetch_listing(hub, &text, error)) return s;
  files.clear();
  if (!parse_listing(text, &files, &perr)) return fail(error, repo + ": the file listing " + perr, ML_E_FORMAT);
  if (!make_dirs(dir) || !write_file_atomic(listing_path, text)) return fail(error, "cannot write " + listing_path);
  const Entry *e = nullptr;
  if (!o.file.empty()) {
    for (const Entry &x : files)
      if (x.path == o.file) e = &x;
    if (!e)
      return fail(error, repo + " has no file " + o.file + " (revision " + kRevision + "); its GGUF files: " +
                             gguf_names(files), ML_E_ARG);
    if (is_split(e->path))
      return fail(error, repo + ": " + e->path + " is one part of a split GGUF, which this runtime does not read "
                             "(merge the parts with llama-gguf-split --merge)", ML_E_ARG);
  } else if (!(e = pick(files, repo, quant, error, &st))) {
    return st;
  }
  if (!safe_path(e->path)) return fail(error, repo + ": the file name " + e->path + " cannot be stored safely", ML_E_FORMAT);
  *path = local(e->path);
  if (file_size(*path) >= 0) return 0;
  return download(hub, *e, *path, error);
}

int resolve_model(const Options &o, const char *prog, std::string *path) {
  std::string error;
  const int s = resolve(o, prog, path, &error);
  if (s) std::fprintf(stderr, "%s: %s\n", prog, error.c_str());
  return s;
}

}  // namespace ml::hub
