// One HTTP(S) GET for the model downloader (hub/hub.cc), over whichever transport this build has:
// libcurl on Linux (hub/http_curl.cc: Debian's libcurl4-openssl-dev, the system's certificate
// store), WinHTTP on Windows (hub/http_winhttp.cc, part of Windows), or none
// (hub/http_none.cc: every request fails with one line saying why the build has no downloader).
// The runtime library never links any of them; ml_run, ml_bench and ml_server do.
//
// Redirects are NOT followed here: the caller reads Location and decides (the hub answers
// resolve/ with a redirect whose own headers carry X-Linked-Etag and X-Linked-Size, and the
// Authorization header must not travel to another host).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ml::hub {

#if defined(_WIN32)
// UTF-8 <-> UTF-16 for the W APIs of hub.cc and http_winhttp.cc (defined there); "" for text that
// does not convert.
std::wstring wide(const std::string &s);
std::string narrow(const wchar_t *w);
#endif

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // sent as given (Authorization, Range, ...)
  long connect_timeout_s = 30;
  long low_speed_timeout_s = 60;  // abort when no byte arrived for this long
  // Receives the body as it arrives (only for 2xx answers); returning false stops the transfer
  // (the request then fails with kind kAborted). Without a sink the body is kept in HttpResponse::body.
  std::function<bool(const char *data, size_t n)> sink;
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, in order received
  std::string body;                                          // when the request had no sink (or not 2xx)
  uint64_t body_bytes = 0;                                   // bytes of body received
  // The value of header `name` (lowercase), "" when absent.
  std::string header(const char *name) const;
};

enum class HttpFailure {
  kNone = 0,
  kNoDownloader,  // this build has no HTTP transport
  kConnect,       // could not connect: refused, no route, DNS failure, TLS handshake
  kTransfer,      // the connection broke or stalled after it was made (a retry may resume)
  kAborted,       // the sink asked to stop
};

// Performs one GET. Returns kNone when an HTTP answer arrived in full (any status code); else the
// kind of failure, with *error one line naming the URL's host and the reason. Never throws.
HttpFailure http_get(const HttpRequest &req, HttpResponse *resp, std::string *error);

// What this build uses ("libcurl 7.88.1", "WinHTTP", or the reason there is none).
const char *http_transport();

}  // namespace ml::hub
