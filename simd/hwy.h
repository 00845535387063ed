// Include this (not hwy/highway.h) in ISA-compiled code that uses Highway. CMake compiles every ISA
// translation unit with HWY_COMPILE_ONLY_STATIC=1, so Highway generates exactly one target: the
// static target the ISA's flags select (the hwy column of simd/isa_table.h; a test checks it).
// Code sits between HWY_BEFORE_NAMESPACE()/HWY_AFTER_NAMESPACE() in namespace hwy::HWY_NAMESPACE
// (needed for the NEON target without +crypto; harmless elsewhere).
#pragma once
#include <hwy/highway.h>
