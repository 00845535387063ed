// hub/http.h for builds without an HTTP transport (configured without libcurl, e.g. the cross
// ARM/RISC-V presets, or the WebAssembly build): --hf then fails in one line saying why, and the
// cache still serves files downloaded earlier (--offline, or a second run).
#include "hub/http.h"

#ifndef ML_HTTP_NONE_REASON
#define ML_HTTP_NONE_REASON "it was configured without libcurl (apt-get install libcurl4-openssl-dev, then configure again)"
#endif

namespace ml::hub {

std::string HttpResponse::header(const char *name) const {
  for (const auto &h : headers)
    if (h.first == name) return h.second;
  return std::string();
}

const char *http_transport() { return "none: " ML_HTTP_NONE_REASON; }

HttpFailure http_get(const HttpRequest &, HttpResponse *resp, std::string *error) {
  *resp = HttpResponse();
  *error = "this build has no downloader: " ML_HTTP_NONE_REASON;
  return HttpFailure::kNoDownloader;
}

}  // namespace ml::hub
