// hub/http.h over the system's `curl` program: the transport of the static Linux programs of the
// downloads (ML_PORTABLE, cmake/Portable.cmake; tools/package.sh). A static program cannot link
// libcurl (Debian's libcurl.a needs a dozen more static libraries, TLS included), and the systems
// the downloads are for have a curl program with their own TLS library and certificate store
// (CentOS 7: curl 7.29). One curl process per request, started without a shell:
//   argv    `curl -q -K -` (-q: the user's ~/.curlrc is not read)
//   stdin   its configuration: URL and headers, so an Authorization token never
//           appears on a command line (ps); only options curl 7.29 already has
//   stdout  the answer's header block(s) (`dump-header = "-"`), then the body, in order
//   stderr  /dev/null; the exit status is mapped to hub/http.h's failure kinds below
// Redirects are not followed (no --location), as with libcurl. An interim answer (1xx) and a
// proxy's "Connection established" block before the real answer are skipped.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "hub/http.h"

extern char **environ;

namespace ml::hub {
namespace {

std::string host_of(const std::string &url) {
  size_t b = url.find("://");
  b = b == std::string::npos ? 0 : b + 3;
  const size_t e = url.find_first_of("/?#", b);
  return url.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// A value in curl's config syntax: double-quoted, with \ and " escaped. false for a line break (a
// header value with one would inject another option).
bool quoted(const std::string &s, std::string *out) {
  *out = "\"";
  for (char c : s) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
    if (c == '\\' || c == '"') *out += '\\';
    *out += c;
  }
  *out += '"';
  return true;
}

// What curl's exit status means (the ones a download meets; curl's man page, EXIT CODES).
const char *curl_reason(int code) {
  switch (code) {
    case 1: return "unsupported protocol";
    case 3: return "malformed URL";
    case 5: return "could not resolve the proxy";
    case 6: return "could not resolve the host";
    case 7: return "could not connect";
    case 18: return "the transfer ended early";
    case 23: return "write error";
    case 28: return "timed out";
    case 35: return "TLS handshake failed";
    case 51: case 60: return "the server's certificate is not trusted";
    case 52: return "the server sent nothing";
    case 55: return "sending failed";
    case 56: return "receiving failed";
    case 77: return "cannot read the CA certificates";
    default: return nullptr;
  }
}

// The answer's header blocks as they arrive on curl's stdout; what follows the final block is body.
struct Parser {
  HttpResponse *resp = nullptr;
  std::string pending;  // bytes of a header block not yet complete
  bool done = false;    // the final header block is in

  // Takes bytes; returns how many of them (at the end of data) are body.
  size_t feed(const char *data, size_t n) {
    size_t used = 0;
    while (!done && used < n) {
      pending.push_back(data[used++]);
      const size_t L = pending.size();
      const bool end = (L >= 2 && pending.compare(L - 2, 2, "\n\n") == 0) ||
                       (L >= 4 && pending.compare(L - 4, 4, "\r\n\r\n") == 0);
      if (end) block();
    }
    return n - used;
  }
  void block() {
    resp->headers.clear();
    resp->status = 0;
    std::string reason;
    size_t pos = 0;
    while (pos < pending.size()) {
      size_t e = pending.find('\n', pos);
      if (e == std::string::npos) e = pending.size();
      std::string line = pending.substr(pos, e - pos);
      pos = e + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (line.rfind("HTTP/", 0) == 0) {  // the status line: "HTTP/1.1 200 OK", "HTTP/2 200"
        const size_t sp = line.find(' ');
        resp->status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
        const size_t sp2 = sp == std::string::npos ? sp : line.find(' ', sp + 1);
        reason = sp2 == std::string::npos ? "" : line.substr(sp2 + 1);
        continue;
      }
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      for (char &ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      const size_t b = value.find_first_not_of(" \t");
      value = b == std::string::npos ? std::string() : value.substr(b);
      resp->headers.emplace_back(name, value);
    }
    pending.clear();
    for (char &ch : reason) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    const bool interim = (resp->status >= 100 && resp->status < 200) ||
                         (resp->status == 200 && reason == "connection established");
    done = resp->status != 0 && !interim;
  }
};

}  // namespace

std::string HttpResponse::header(const char *name) const {
  for (const auto &h : headers)
    if (h.first == name) return h.second;
  return std::string();
}

const char *http_transport() { return "the curl program (on PATH)"; }

HttpFailure http_get(const HttpRequest &req, HttpResponse *resp, std::string *error) {
  *resp = HttpResponse();
  const std::string host = host_of(req.url);
  // The configuration curl reads from stdin.
  std::string cfg = "silent\ngloboff\nno-buffer\ndump-header = \"-\"\nuser-agent = \"legacy-ml\"\n"
                    "proto = \"=http,https\"\nheader = \"Expect:\"\n";
  cfg += "connect-timeout = " + std::to_string(req.connect_timeout_s) + "\n";
  cfg += "speed-limit = 1\nspeed-time = " + std::to_string(req.low_speed_timeout_s) + "\n";
  std::string q;
  for (const auto &kv : req.headers) {
    if (!quoted(kv.first + ": " + kv.second, &q)) {
      *error = "cannot connect to " + host + ": the header " + kv.first + " contains a line break";
      return HttpFailure::kConnect;
    }
    cfg += "header = " + q + "\n";
  }
  if (!quoted(req.url, &q)) {
    *error = "cannot connect to " + host + ": the URL contains a line break";
    return HttpFailure::kConnect;
  }
  cfg += "url = " + q + "\n";

  int in[2], out[2];  // in: a socket pair, so writing to a curl that died is EPIPE, not SIGPIPE
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    *error = std::string("cannot start curl: ") + std::strerror(errno);
    return HttpFailure::kConnect;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("cannot start curl: ") + std::strerror(errno);
    close(in[0]), close(in[1]);
    return HttpFailure::kConnect;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[1], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char a0[] = "curl", a1[] = "-q", a2[] = "-K", a3[] = "-";  // -q first: no ~/.curlrc (it could add --location, -o, ...)
  char *argv[] = {a0, a1, a2, a3, nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "curl", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[1]);
  close(out[1]);
  if (rc != 0) {
    close(in[0]), close(out[0]);
    *error = rc == ENOENT ? "this build downloads through the curl program, and there is none on PATH (install curl)"
                          : std::string("cannot start curl: ") + std::strerror(rc);
    return rc == ENOENT ? HttpFailure::kNoDownloader : HttpFailure::kConnect;
  }
  for (size_t off = 0; off < cfg.size();) {
    const ssize_t w = send(in[0], cfg.data() + off, cfg.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // curl is gone: its exit status says why
    off += size_t(w);
  }
  close(in[0]);

  Parser parser;
  parser.resp = resp;
  bool aborted = false;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = read(out[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    const size_t body = parser.feed(buf, size_t(r));
    if (body == 0) continue;
    const char *d = buf + (size_t(r) - body);
    resp->body_bytes += body;
    const int code = resp->status;
    if (req.sink && code >= 200 && code < 300) {
      if (!req.sink(d, body)) {
        aborted = true;
        kill(pid, SIGTERM);
        break;
      }
    } else if (resp->body.size() < (64u << 20)) {  // listings and error pages; never a model
      resp->body.append(d, body);
    }
  }
  close(out[0]);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (aborted) {
    *error = "download from " + host + " stopped";
    return HttpFailure::kAborted;
  }
  const int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  if (code == 0 && parser.done) return HttpFailure::kNone;
  const char *why = curl_reason(code);
  const std::string reason = code < 0 ? "curl was killed by signal " + std::to_string(WTERMSIG(ws))
                             : why   ? std::string(why) + " (curl exit status " + std::to_string(code) + ")"
                             : code == 0 ? std::string("no HTTP answer")
                                         : "curl exit status " + std::to_string(code);
  const bool before_answer = !parser.done;
  switch (code) {
    case 1: case 3: case 5: case 6: case 7: case 35: case 51: case 60: case 77:
      *error = "cannot connect to " + host + ": " + reason;
      return HttpFailure::kConnect;
    case 28:
      if (before_answer) {
        *error = "cannot connect to " + host + ": " + reason;
        return HttpFailure::kConnect;
      }
      break;
    default: break;
  }
  *error = "the connection to " + host + " broke: " + reason;
  return HttpFailure::kTransfer;
}

}  // namespace ml::hub
