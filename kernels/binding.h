// Static kernel binding, derived from the two tables (simd/isa_table.h, kernels/kernel_table.h).
//
//   ml::KernelSet<Isa>  a type whose static constexpr members are the resolved kernels of one ISA,
//                       e.g. KernelSet<kBuildIsa>::matvec_q8. The forward pass is a template on it,
//                       so one process can run the build's kernels and the scalar reference side
//                       by side (verify/).
//   ml::ScalarKernels, ml::BuildKernels   the two sets every build instantiates.
//   ml::kernel_bindings()                 (kernel, implementation) names for `ml_run --version`.
//   ml::for_each_variant<Kn>(f)           every implementation of kernel Kn compiled into this
//                                         build (own set, ancestors', hwy, scalar), for the tests.
//
// Only compile-time data and direct calls: a resolved member is a constant function address,
// so calls through it are direct calls the compiler can inline under LTO.
#pragma once
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "simd/isa.h"

namespace ml {

// Implementation ids: the ISA ids of simd/isa_table.h (as override sets), then hwy.
using ImplId = int;
inline constexpr ImplId kHwy = static_cast<int>(Isa::count);

constexpr uint32_t impl_bit(ImplId i) { return 1u << i; }

namespace impl_bits {  // the names kernel_table.h's masks are written with
inline constexpr uint32_t none = 0;
inline constexpr uint32_t hwy = impl_bit(kHwy);
#define ML_IMPL_BIT(arg, name, ...) inline constexpr uint32_t name = impl_bit(static_cast<int>(Isa::name));
ML_ISA_TABLE(ML_IMPL_BIT, _)
#undef ML_IMPL_BIT
}  // namespace impl_bits

constexpr const char *impl_name(ImplId i) {
  return i == kHwy ? "hwy" : isa_row(static_cast<Isa>(i)).name;
}

// The resolution rule of kernel_table.h.
constexpr ImplId resolve(uint32_t provided, Isa isa) {
  for (Isa i = isa;; i = isa_row(i).parent) {
    const ImplId own = static_cast<int>(isa_row(i).impl);
    if (provided & impl_bit(own)) return own;
    if (i == isa && isa_row(isa).hwy_target[0] != '\0' && (provided & impl_bit(kHwy))) return kHwy;
    if (i == Isa::scalar) return static_cast<int>(Isa::scalar);
  }
}

// Declarations of every conceivable implementation symbol; only the ones a build references must
// exist at link time.
#define ML_DECL_ONE(k, name, ...) ml_k_##k##_fn ml_k_##k##_##name;
#define ML_DECL(k, mask) \
  extern "C" {           \
  ML_ISA_TABLE(ML_DECL_ONE, k)                                                               \
  ml_k_##k##_fn ml_k_##k##_hwy;                                                             \
  }
ML_KERNEL_TABLE(ML_DECL)
#undef ML_DECL
#undef ML_DECL_ONE

// One trait type per kernel: its name, provided mask, and symbol by implementation id.
#define ML_PICK_CASE(k, name, ...) \
  if constexpr (I == static_cast<int>(Isa::name)) return &ml_k_##k##_##name; else
#define ML_KERNEL_TRAIT(k, mask)                                                        \
  struct kn_##k {                                                                       \
    using fn = ml_k_##k##_fn;                                                           \
    static constexpr const char *name = #k;                                             \
    static constexpr uint32_t provided() {                                              \
      using namespace impl_bits;                                                        \
      return (mask) | impl_bits::scalar;                                                \
    }                                                                                   \
    template <ImplId I>                                                                 \
    static constexpr fn *pick() {                                                       \
      ML_ISA_TABLE(ML_PICK_CASE, k)                                                     \
      if constexpr (I == kHwy) return &ml_k_##k##_hwy; else return nullptr;             \
    }                                                                                   \
  };
ML_KERNEL_TABLE(ML_KERNEL_TRAIT)
#undef ML_KERNEL_TRAIT
#undef ML_PICK_CASE

template <Isa ISA>
struct KernelSet {
  static constexpr Isa isa = ISA;
  // Generic access by kernel trait (kn_<kernel>), for code that iterates over kernels.
  template <class Kn>
  static constexpr ImplId impl_of() {
    return resolve(Kn::provided(), ISA);
  }
  template <class Kn>
  static constexpr typename Kn::fn *fn_of() {
    return Kn::template pick<impl_of<Kn>()>();
  }
#define ML_MEMBER(k, mask)                                                         \
  static constexpr ImplId impl_##k = resolve(kn_##k::provided(), ISA);             \
  static constexpr ml_k_##k##_fn *k = kn_##k::template pick<impl_##k>();
  ML_KERNEL_TABLE(ML_MEMBER)
#undef ML_MEMBER
};

using ScalarKernels = KernelSet<Isa::scalar>;
using BuildKernels = KernelSet<kBuildIsa>;

struct KernelBinding {
  const char *kernel;
  const char *impl;
};
inline constexpr KernelBinding kKernelBindings[] = {
#define ML_BINDING(k, mask) {#k, impl_name(BuildKernels::impl_##k)},
    ML_KERNEL_TABLE(ML_BINDING)
#undef ML_BINDING
};

// Calls f(impl_name, fn*) for every implementation of kernel Kn compiled into this build:
// the build chain's override sets that provide it, hwy (compiled where the build ISA has a
// Highway target), and scalar.
inline constexpr bool kBuildHasHwy = isa_row(kBuildIsa).hwy_target[0] != '\0';

template <class Kn, Isa I = kBuildIsa, class F>
void for_each_variant(F &&f) {
  constexpr ImplId own = static_cast<int>(isa_row(I).impl);
  if constexpr (I == kBuildIsa && kBuildHasHwy && (Kn::provided() & impl_bit(kHwy)) != 0)
    f(impl_name(kHwy), Kn::template pick<kHwy>());
  if constexpr ((Kn::provided() & impl_bit(own)) != 0) f(impl_name(own), Kn::template pick<own>());
  if constexpr (I != Isa::scalar) for_each_variant<Kn, isa_row(I).parent>(f);
}

}  // namespace ml
