// A model by name: `--hf ORG/REPO[:QUANT]` for ml_run, ml_bench and ml_server (issue 39; docs/hub.md).
// Lists the repository's files through the Hugging Face hub's HTTP API (or a mirror's: HF_ENDPOINT),
// picks the GGUF of the quant, downloads it into the cache (resumable .part file, SHA-256 checked
// against the hub's LFS metadata before it is renamed into place, free space checked first) and
// hands back its path; a file already in the cache is used without the network.
//
// Library-style: resolve() returns an ml_status and one line naming what failed; only the progress
// of a download is printed (stderr). The HTTP transport is hub/http.h's; the runtime library
// has none of this.
#pragma once
#include <string>

// How this build downloads (the programs' --help says it).
#if defined(_WIN32)
#define ML_HUB_TRANSPORT "WinHTTP"
#elif defined(ML_HUB_CURL)
#define ML_HUB_TRANSPORT "libcurl"
#elif defined(ML_HUB_CURL_PROGRAM)
#define ML_HUB_TRANSPORT "the curl program (this static build runs the system's curl)"
#else
#define ML_HUB_TRANSPORT "none: this build was configured without libcurl; only cached files"
#endif

// The quants tried in order when --hf names none (the first the repository has wins).
#define ML_HUB_DEFAULT_QUANTS "Q4_K_M Q4_0 Q8_0 Q5_K_M Q6_K Q4_K_S Q5_K_S Q5_0 Q4_1 Q5_1 Q3_K_M F16 BF16 F32"

namespace ml::hub {

struct Options {
  std::string spec;      // --hf ORG/REPO[:QUANT]
  std::string file;      // --hf-file NAME
  std::string token;     // --hf-token (else $HF_TOKEN)
  std::string endpoint;  // --hf-endpoint (else $HF_ENDPOINT, else https://huggingface.co)
  bool offline = false;  // --offline (or $HF_HUB_OFFLINE=1)
  bool wanted() const { return !spec.empty() || !file.empty(); }
};

// The local path of the model `o` names, downloading it when it is not in the cache. Returns 0
// (ML_OK) with *path, or an ml_status (ML_E_ARG: a bad name, a quant or file the repository does
// not have, a split file; ML_E_IO: network, HTTP, disk, checksum) with *error one line, without the
// program's name. `prog` prefixes the progress lines on stderr. Nothing half-written is left in the
// cache's final names (a .part file may stay, to be resumed).
int resolve(const Options &o, const char *prog, std::string *path, std::string *error);

// resolve(), printing "<prog>: <error>" on stderr when it fails: what the programs call.
int resolve_model(const Options &o, const char *prog, std::string *path);

// The cache folder: $ML_CACHE, else the platform's cache folder + "/legacy-ml".
std::string cache_root();

}  // namespace ml::hub
