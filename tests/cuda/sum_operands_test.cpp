// launch_sum's aliasing rule (kernels/cuda/sum_logic.h): the output may be
// the first part, never another one, since later passes (more than
// kSumPartsPerPass parts) read the partial sum back from the output. The
// check runs on the host before any launch, so it is tested here without a
// GPU, through launch_sum itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "kernels/cuda/memory_kernels.h"
#include "kernels/cuda/sum_logic.h"

namespace devmap::test {
namespace {

// `n` parts of `count` floats, one after another in `storage`.
std::vector<const float*> parts_in(const std::vector<float>& storage, int n, int64_t count) {
  std::vector<const float*> parts;
  for (int k = 0; k < n; ++k) parts.push_back(storage.data() + k * count);
  return parts;
}

TEST(SumOperands, OutputMayBeTheFirstPartOrNone) {
  const int64_t count = 8;
  std::vector<float> storage(40 * count), out(count);
  for (int n : {1, 2, 16, 17, 40}) {
    const std::vector<const float*> parts = parts_in(storage, n, count);
    EXPECT_EQ(cuda::sum_operand_problem(out.data(), parts, count), "") << n;
    EXPECT_EQ(cuda::sum_operand_problem(const_cast<float*>(parts[0]), parts, count), "") << n;
  }
}

TEST(SumOperands, OutputThatIsAnotherPartIsRefusedBeforeAnyLaunch) {
  const int64_t count = 8;
  std::vector<float> storage(40 * count);
  const std::vector<const float*> parts = parts_in(storage, 40, count);
  // Part 17 is read by the second pass, after the first wrote the output.
  for (int k : {1, 15, 16, 17, 39}) {
    float* out = const_cast<float*>(parts[static_cast<size_t>(k)]);
    const std::string problem = cuda::sum_operand_problem(out, parts, count);
    EXPECT_NE(problem.find("overlaps part " + std::to_string(k) + " of 40"), std::string::npos) << problem;
    try {
      cuda::launch_sum(out, parts, count, nullptr);
      FAIL() << "part " << k;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), problem);
    }
  }
}

TEST(SumOperands, PartialOverlapIsRefused) {
  const int64_t count = 8;
  std::vector<float> storage(4 * count);
  const std::vector<const float*> parts = parts_in(storage, 3, count);
  float* shifted = storage.data() + 1;  // overlaps part 0 without being it, and part 1
  EXPECT_NE(cuda::sum_operand_problem(shifted, parts, count).find("overlaps part 0 of 3 without being it"),
            std::string::npos);
  float* tail = storage.data() + 2 * count + 4;  // inside part 2
  EXPECT_NE(cuda::sum_operand_problem(tail, parts, count).find("overlaps part 2"), std::string::npos);
  // Nothing to add: nothing overlaps.
  EXPECT_EQ(cuda::sum_operand_problem(shifted, parts, 0), "");
}

}  // namespace
}  // namespace devmap::test
