// Replays files through a fuzz target without libFuzzer (the corpus and regression ctests of
// cmake/fuzz.cmake, in any build, sanitized or not).
//
//   fuzz_<target>_replay PATH...    each PATH a file or a folder (its files, sorted by name)
//
// Every input runs once through LLVMFuzzerTestOneInput; a crash or a violated property aborts.
// Seeds named ok-* must be accepted and bad-* rejected (mlfuzz::g_accepted). Prints one line per
// folder and fails when no input ran at all.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

std::vector<std::string> files_of(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) return {path};
  std::vector<std::string> out;
  if (DIR *d = opendir(path.c_str())) {
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || name[0] == '.' || name == "README.md") continue;
      const std::string p = path + "/" + name;
      if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(p);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string base_name(const std::string &p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

extern "C" int ml_main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  int total = 0, failures = 0;
  for (int a = 1; a < argc; ++a) {
    const std::vector<std::string> files = files_of(argv[a]);
    int accepted = 0, rejected = 0;
    for (const std::string &f : files) {
      std::ifstream in(f, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
        ++failures;
        continue;
      }
      mlfuzz::g_accepted = -1;
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
      ++total;
      accepted += mlfuzz::g_accepted == 1;
      rejected += mlfuzz::g_accepted == 0;
      const std::string name = base_name(f);
      const int want = name.rfind("ok-", 0) == 0 ? 1 : name.rfind("bad-", 0) == 0 ? 0 : -1;
      if (want >= 0 && mlfuzz::g_accepted != want) {
        std::fprintf(stderr, "replay: %s was %s, its name says it must be %s\n", f.c_str(),
                     mlfuzz::g_accepted == 1 ? "accepted" : mlfuzz::g_accepted == 0 ? "rejected" : "skipped",
                     want ? "accepted" : "rejected");
        ++failures;
      }
    }
    std::printf("replay: %s: %zu inputs (%d accepted, %d rejected)\n", argv[a], files.size(), accepted, rejected);
  }
  if (total == 0) {
    std::fprintf(stderr, "replay: no input ran\n");
    return 1;
  }
  std::printf("replay: %d inputs, %d expectation failures\n", total, failures);
  return failures ? 1 : 0;
}
