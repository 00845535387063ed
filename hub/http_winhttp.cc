// hub/http.h over WinHTTP (Windows: part of the system, mingw-w64's libwinhttp import library;
// certificates from the Windows store; the system's proxy settings). One session per request;
// redirects are not followed (WINHTTP_OPTION_REDIRECT_POLICY_NEVER).
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <winhttp.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hub/http.h"

namespace ml::hub {

std::wstring wide(const std::string &s) {
  const int n = MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, nullptr, 0);
  if (n <= 0) return std::wstring();
  std::wstring w(size_t(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, s.c_str(), -1, &w[0], n);
  w.resize(size_t(n - 1));
  return w;
}

std::string narrow(const wchar_t *w) {
  const int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, nullptr, 0, nullptr, nullptr);
  if (n <= 0) return std::string();
  std::string s(size_t(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, w, -1, &s[0], n, nullptr, nullptr);
  s.resize(size_t(n - 1));
  return s;
}

namespace {

struct Handle {
  HINTERNET h = nullptr;
  ~Handle() {
    if (h) WinHttpCloseHandle(h);
  }
};

std::string reason(DWORD e) {
  switch (e) {
    case ERROR_WINHTTP_CANNOT_CONNECT: return "connection refused or unreachable";
    case ERROR_WINHTTP_NAME_NOT_RESOLVED: return "the host name was not found";
    case ERROR_WINHTTP_TIMEOUT: return "timed out";
    case ERROR_WINHTTP_CONNECTION_ERROR: return "the connection was reset or closed";
    case ERROR_WINHTTP_SECURE_FAILURE: return "the TLS certificate was refused";
    case ERROR_WINHTTP_INVALID_URL:
    case ERROR_WINHTTP_UNRECOGNIZED_SCHEME: return "not a valid http(s) URL";
    default: {
      char b[48];
      std::snprintf(b, sizeof b, "WinHTTP error %lu", static_cast<unsigned long>(e));
      return b;
    }
  }
}

bool connect_error(DWORD e) {
  return e == ERROR_WINHTTP_CANNOT_CONNECT || e == ERROR_WINHTTP_NAME_NOT_RESOLVED ||
         e == ERROR_WINHTTP_SECURE_FAILURE || e == ERROR_WINHTTP_INVALID_URL || e == ERROR_WINHTTP_UNRECOGNIZED_SCHEME;
}

}  // namespace

std::string HttpResponse::header(const char *name) const {
  for (const auto &h : headers)
    if (h.first == name) return h.second;
  return std::string();
}

const char *http_transport() { return "WinHTTP"; }

HttpFailure http_get(const HttpRequest &req, HttpResponse *resp, std::string *error) {
  *resp = HttpResponse();
  const std::wstring wurl = wide(req.url);
  URL_COMPONENTS uc;
  ZeroMemory(&uc, sizeof uc);
  uc.dwStructSize = sizeof uc;
  uc.dwSchemeLength = uc.dwHostNameLength = uc.dwUrlPathLength = uc.dwExtraInfoLength = DWORD(-1);
  std::string host = req.url;
  if (wurl.empty() || !WinHttpCrackUrl(wurl.c_str(), 0, 0, &uc)) {
    *error = "cannot connect to " + req.url + ": not a valid http(s) URL";
    return HttpFailure::kConnect;
  }
  const std::wstring whost(uc.lpszHostName, uc.dwHostNameLength);
  host = narrow(whost.c_str());  // host[:port], as curl's messages name it
  if (uc.nPort != (uc.nScheme == INTERNET_SCHEME_HTTPS ? 443 : 80)) host += ":" + std::to_string(uc.nPort);
  std::wstring path(uc.lpszUrlPath, uc.dwUrlPathLength);
  if (uc.dwExtraInfoLength) path.append(uc.lpszExtraInfo, uc.dwExtraInfoLength);
  if (path.empty()) path = L"/";
  auto failed = [&](const char *stage, HttpFailure kind) {
    const DWORD e = GetLastError();
    if (kind == HttpFailure::kTransfer && connect_error(e)) kind = HttpFailure::kConnect;
    *error = (kind == HttpFailure::kConnect ? "cannot connect to " : "the connection to ") + host +
             (kind == HttpFailure::kConnect ? ": " : " broke: ") + reason(e) + " (" + stage + ")";
    return kind;
  };
  Handle session, conn, request;
  session.h = WinHttpOpen(L"legacy-ml", WINHTTP_ACCESS_TYPE_DEFAULT_PROXY, WINHTTP_NO_PROXY_NAME,
                          WINHTTP_NO_PROXY_BYPASS, 0);
  if (!session.h) return failed("WinHttpOpen", HttpFailure::kConnect);
  const int c_ms = int(req.connect_timeout_s * 1000), r_ms = int(req.low_speed_timeout_s * 1000);
  WinHttpSetTimeouts(session.h, c_ms, c_ms, r_ms, r_ms);
  conn.h = WinHttpConnect(session.h, whost.c_str(), uc.nPort, 0);
  if (!conn.h) return failed("connect", HttpFailure::kConnect);
  request.h = WinHttpOpenRequest(conn.h, L"GET", path.c_str(), nullptr, WINHTTP_NO_REFERER,
                                 WINHTTP_DEFAULT_ACCEPT_TYPES, uc.nScheme == INTERNET_SCHEME_HTTPS ? WINHTTP_FLAG_SECURE : 0);
  if (!request.h) return failed("request", HttpFailure::kConnect);
  DWORD never = WINHTTP_OPTION_REDIRECT_POLICY_NEVER;
  WinHttpSetOption(request.h, WINHTTP_OPTION_REDIRECT_POLICY, &never, sizeof never);
  std::wstring hdrs;
  for (const auto &kv : req.headers) hdrs += wide(kv.first + ": " + kv.second + "\r\n");
  if (!WinHttpSendRequest(request.h, hdrs.empty() ? WINHTTP_NO_ADDITIONAL_HEADERS : hdrs.c_str(),
                          hdrs.empty() ? 0 : DWORD(-1), WINHTTP_NO_REQUEST_DATA, 0, 0, 0))
    return failed("send", HttpFailure::kConnect);
  if (!WinHttpReceiveResponse(request.h, nullptr)) return failed("response", HttpFailure::kTransfer);
  DWORD status = 0, len = sizeof status;
  WinHttpQueryHeaders(request.h, WINHTTP_QUERY_STATUS_CODE | WINHTTP_QUERY_FLAG_NUMBER, WINHTTP_HEADER_NAME_BY_INDEX,
                      &status, &len, WINHTTP_NO_HEADER_INDEX);
  resp->status = int(status);
  len = 0;
  WinHttpQueryHeaders(request.h, WINHTTP_QUERY_RAW_HEADERS_CRLF, WINHTTP_HEADER_NAME_BY_INDEX, nullptr, &len,
                      WINHTTP_NO_HEADER_INDEX);
  if (len) {
    std::vector<wchar_t> raw(len / sizeof(wchar_t) + 1, L'\0');
    if (WinHttpQueryHeaders(request.h, WINHTTP_QUERY_RAW_HEADERS_CRLF, WINHTTP_HEADER_NAME_BY_INDEX, raw.data(), &len,
                            WINHTTP_NO_HEADER_INDEX)) {
      const std::string text = narrow(raw.data());
      size_t start = text.find("\r\n");  // past the status line
      while (start != std::string::npos && start + 2 < text.size()) {
        start += 2;
        const size_t end = text.find("\r\n", start);
        const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const size_t colon = line.find(':');
        if (colon != std::string::npos) {
          std::string name = line.substr(0, colon), value = line.substr(colon + 1);
          for (char &ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
          const size_t b = value.find_first_not_of(" \t");
          resp->headers.emplace_back(name, b == std::string::npos ? std::string() : value.substr(b));
        }
        start = end;
      }
    }
  }
  const bool to_sink = req.sink && resp->status >= 200 && resp->status < 300;
  std::vector<char> buf(1 << 16);
  for (;;) {
    DWORD got = 0;
    if (!WinHttpReadData(request.h, buf.data(), DWORD(buf.size()), &got)) return failed("read", HttpFailure::kTransfer);
    if (got == 0) break;
    resp->body_bytes += got;
    if (to_sink) {
      if (!req.sink(buf.data(), got)) {
        *error = "download from " + host + " stopped";
        return HttpFailure::kAborted;
      }
    } else if (resp->body.size() < (64u << 20)) {
      resp->body.append(buf.data(), got);
    }
  }
  // A body shorter than its Content-Length: the connection was cut (WinHTTP may report it as an end).
  const std::string cl = resp->header("content-length");
  if (!cl.empty() && std::strtoull(cl.c_str(), nullptr, 10) > resp->body_bytes) {
    *error = "the connection to " + host + " broke: the connection was closed early (" +
             std::to_string(resp->body_bytes) + " of " + cl + " bytes)";
    return HttpFailure::kTransfer;
  }
  return HttpFailure::kNone;
}

}  // namespace ml::hub
