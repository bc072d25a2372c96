// pool() and l2_normalize() against values worked out by hand.
#include "engine/context/pooling.h"

#include <gtest/gtest.h>

#include "loom/error.h"

namespace loom::engine {
namespace {

TEST(Pooling, MeanFirstLastAndTheRest) {
    const std::vector<float> rows = {1, 2, 3, 4, 5, 6};  // three tokens of two
    EXPECT_EQ(pool(rows, 2, Pooling::mean), (std::vector<float>{3, 4}));
    EXPECT_EQ(pool(rows, 2, Pooling::cls), (std::vector<float>{1, 2}));
    EXPECT_EQ(pool(rows, 2, Pooling::last), (std::vector<float>{5, 6}));
    EXPECT_THROW(pool(rows, 2, Pooling::none), Error);
    EXPECT_THROW(pool(rows, 2, Pooling::rank), Error);
    EXPECT_THROW(pool(rows, 4, Pooling::mean), Error);
    EXPECT_THROW(pool({}, 2, Pooling::mean), Error);
    std::vector<float> v = {3, 4};
    l2_normalize(v);
    EXPECT_FLOAT_EQ(v[0], 0.6f);
    EXPECT_FLOAT_EQ(v[1], 0.8f);
    std::vector<float> zero = {0, 0};
    l2_normalize(zero);
    EXPECT_EQ(zero, (std::vector<float>{0, 0}));
}

}  // namespace
}  // namespace loom::engine
