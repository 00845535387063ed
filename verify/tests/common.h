// Helpers for the Catch2 tests: paths from the environment, and turning verify/ check rows into
// Catch assertions (one CHECK per row, with its shape and first mismatch on failure).
#pragma once
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "verify/verify.h"

namespace test {

inline std::string env_path(const char *var, const std::string &rel) {
  const char *v = std::getenv(var);
  REQUIRE(v != nullptr);
  return std::string(v) + "/" + rel;
}
inline std::string shared(const std::string &rel) { return env_path("ML_SHARED", rel); }
inline std::string models(const std::string &rel) { return env_path("ML_MODELS", rel); }

inline std::string read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline std::vector<int> read_ids(const std::string &path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::vector<int> ids;
  int v;
  while (f >> v) ids.push_back(v);
  return ids;
}

struct Rows {
  std::vector<ml_check> rows;
  static void sink(const ml_check *c, void *user) { static_cast<Rows *>(user)->rows.push_back(*c); }
};

// Asserts every row passed; returns the rows for further checks.
inline std::vector<ml_check> expect_all_pass(const Rows &r) {
  REQUIRE(!r.rows.empty());
  for (const ml_check &c : r.rows) {
    INFO(c.group << " | " << c.name << " | " << c.shape << " | max err " << c.max_err << " tol " << c.tol << " | "
                 << c.cases << " cases | " << c.detail);
    CHECK(c.cases > 0);
    CHECK(c.pass == 1);
  }
  return r.rows;
}

}  // namespace test
