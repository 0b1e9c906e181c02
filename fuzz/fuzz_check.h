// FUZZ_CHECK: an invariant the fuzz targets assert on what the code under
// test accepted. A violation prints where and aborts, which libFuzzer and
// the corpus replay test both report as a finding. Active in every build
// type (unlike assert).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                                          \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s (%s)\n", __FILE__, __LINE__, #cond, what); \
      std::abort();                                                                                     \
    }                                                                                                   \
  } while (0)
