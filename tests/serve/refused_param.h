#pragma once
// The field a request parser names when it refuses a body with a 400, for the request tests.
#include <gtest/gtest.h>

#include <string>

#include "tools/loom/serve/request.h"

namespace loom::serve {

// RequestError's param for `body` under `parse` (a callable taking the body); fails the test
// when the body is taken or the status is not 400.
template <typename Parse>
std::string refused_param(const char *body, const Parse &parse) {
    try {
        parse(body);
    } catch (const RequestError &e) {
        EXPECT_EQ(e.status(), 400);
        return e.param();
    }
    ADD_FAILURE() << "taken: " << body;
    return "";
}

}  // namespace loom::serve
