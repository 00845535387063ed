// hub/http.h over libcurl (Linux: Debian's libcurl4-openssl-dev; certificates from the system's
// store, as curl itself uses them). One easy handle per request; redirects are not followed.
#include <curl/curl.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "hub/http.h"

namespace ml::hub {
namespace {

struct Call {
  const HttpRequest *req;
  HttpResponse *resp;
  bool aborted = false;
};

size_t on_header(char *data, size_t size, size_t n, void *user) {
  Call *c = static_cast<Call *>(user);
  const size_t len = size * n;
  std::string line(data, len);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {  // a status line: a new answer (e.g. after "100 Continue")
    c->resp->headers.clear();
    const size_t sp = line.find(' ');
    c->resp->status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
    return len;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return len;
  std::string name = line.substr(0, colon), value = line.substr(colon + 1);
  for (char &ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  const size_t b = value.find_first_not_of(" \t");
  value = b == std::string::npos ? std::string() : value.substr(b);
  c->resp->headers.emplace_back(name, value);
  return len;
}

size_t on_body(char *data, size_t size, size_t n, void *user) {
  Call *c = static_cast<Call *>(user);
  const size_t len = size * n;
  c->resp->body_bytes += len;
  const int code = c->resp->status;  // known once the headers are in: only a 2xx body goes to the sink
  if (c->req->sink && code >= 200 && code < 300) {
    if (!c->req->sink(data, len)) {
      c->aborted = true;
      return 0;  // curl stops with CURLE_WRITE_ERROR
    }
  } else if (c->resp->body.size() < (64u << 20)) {  // listings and error pages; never a model
    c->resp->body.append(data, len);
  }
  return len;
}

std::string host_of(const std::string &url) {
  size_t b = url.find("://");
  b = b == std::string::npos ? 0 : b + 3;
  const size_t e = url.find_first_of("/?#", b);
  return url.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

}  // namespace

std::string HttpResponse::header(const char *name) const {
  for (const auto &h : headers)
    if (h.first == name) return h.second;
  return std::string();
}

const char *http_transport() {
  static std::string s = std::string("libcurl ") + curl_version_info(CURLVERSION_NOW)->version;
  return s.c_str();
}

HttpFailure http_get(const HttpRequest &req, HttpResponse *resp, std::string *error) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  *resp = HttpResponse();
  CURL *h = curl_easy_init();
  if (!h) {
    *error = "libcurl could not start a transfer";
    return HttpFailure::kConnect;
  }
  Call call{&req, resp};
  curl_slist *headers = nullptr;
  for (const auto &kv : req.headers) headers = curl_slist_append(headers, (kv.first + ": " + kv.second).c_str());
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "legacy-ml");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, req.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, req.low_speed_timeout_s);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &call);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &call);
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  const CURLcode rc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  if (code) resp->status = int(code);
  curl_easy_cleanup(h);
  curl_slist_free_all(headers);
  if (rc == CURLE_OK) return HttpFailure::kNone;
  const std::string host = host_of(req.url);
  const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  if (call.aborted) {
    *error = "download from " + host + " stopped";
    return HttpFailure::kAborted;
  }
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      *error = "cannot connect to " + host + ": " + why;
      return HttpFailure::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      if (resp->status == 0) {
        *error = "cannot connect to " + host + ": " + why;
        return HttpFailure::kConnect;
      }
      break;
    default: break;
  }
  *error = "the connection to " + host + " broke: " + why;
  return HttpFailure::kTransfer;
}

}  // namespace ml::hub
