// Every kernel implementation compiled into this build against the scalar reference
// (verify/kernel_checks.cc), plus the build facts the binding promises.
#include <cstring>
#include <set>
#include <string>

#include "runtime/ml.h"
#include "simd/isa.h"
#include "verify/tests/common.h"

TEST_CASE("every kernel variant matches the scalar reference", "[kernels]") {
  test::Rows r;
  const int failures = ml_verify_kernels(&test::Rows::sink, &r, 1.0);
  const auto rows = test::expect_all_pass(r);
  CHECK(failures == 0);
  // The implementation each kernel is bound to in this build was among the tested variants.
  std::set<std::string> tested;
  for (const ml_check &c : rows) tested.insert(c.name);
  for (int i = 0; i < ml_kernel_count(); ++i) {
    const std::string name = std::string(ml_kernel_name(i)) + " [" + ml_kernel_impl(i) + "]";
    INFO("bound implementation " << name);
    CHECK(tested.count(name) == 1);
  }
}

TEST_CASE("the harness catches deliberately wrong kernels", "[kernels]") {
  test::Rows r;
  const int failures = ml_verify_selftest(&test::Rows::sink, &r);
  REQUIRE(!r.rows.empty());
  CHECK(failures > 0);
  int caught[4] = {0, 0, 0, 0};
  for (const ml_check &c : r.rows) {
    const std::string name = c.name;
    if (!c.pass)
      caught[name.rfind("matvec_q8", 0) == 0 ? 0 : name.rfind("rmsnorm", 0) == 0 ? 1 : name.rfind("quantize", 0) == 0 ? 2 : 3]++;
  }
  CHECK(caught[0] > 0);  // int32 block sums and results of a matvec that drops a block
  CHECK(caught[1] > 0);  // an rmsnorm 1e-4 off
  CHECK(caught[2] > 0);  // a quantizer that truncates
  CHECK(caught[3] > 0);  // a dequantizer that takes the first block's scale everywhere
}

TEST_CASE("the Highway static target is the one the ISA table names", "[kernels]") {
  const ml::IsaRow &row = ml::isa_row(ml::kBuildIsa);
  INFO("ISA " << row.name << ": table says '" << row.hwy_target << "', build has " << ml_hwy_target());
  if (row.hwy_target[0] != '\0') CHECK(std::strcmp(ml_hwy_target(), row.hwy_target) == 0);
  CHECK(std::strcmp(ml_build_isa(), row.name) == 0);
}
