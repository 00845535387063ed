// ml_tests: the Catch2 runner. Compiled without ISA flags, like every test case file here; the
// ISA-compiled code lives in the verify/, runtime/ and kernels/ libraries and runs only inside test
// bodies, after the CPU guard (native/guarded_main.cc's preinit hook) has passed.
//
// Environment (set by CTest, see CMakeLists.txt):
//   ML_SHARED  the shared data folder (../shared: real models, golden output)
//   ML_MODELS  where the test fixtures wrote converted / generated .mlb files
// A test group that needs ML_SHARED exits with 77 (CTest: skipped) and a loud message when the
// folder is absent; ML_NEEDS_SHARED=1 marks such groups.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>

extern "C" int ml_main(int argc, char **argv) {
  const char *needs = std::getenv("ML_NEEDS_SHARED");
  if (needs && needs[0] == '1') {
    const char *shared = std::getenv("ML_SHARED");
    struct stat st;
    if (!shared || stat(shared, &st) != 0 || !S_ISDIR(st.st_mode)) {
      std::fprintf(stderr,
                   "\n*** SKIPPED: the shared test data folder (%s) is absent. These tests need the real models\n"
                   "*** and golden output from ../shared; see README.md (Tests).\n\n",
                   shared ? shared : "ML_SHARED unset");
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
