#pragma once
// A rule on which tokens may come next (a grammar: engine/grammar/token_grammar.h), which the
// Sampler consults. The caller owns it and tells it each token it keeps.
#include <cstdint>
#include <vector>

namespace loom::engine {

class TokenConstraint {
  public:
    virtual ~TokenConstraint() = default;
    // Whether `token` may come next.
    virtual bool allows(int32_t token) const = 0;
    // Records `token` as the next one; throws loom::Error if allows(token) is false.
    virtual void accept(int32_t token) = 0;
    // allowed[id] = allows(id) for every id of a vocabulary of allowed.size() tokens; a
    // constraint overrides it where it can answer for all of them faster.
    virtual void mark_allowed(std::vector<uint8_t> &allowed) const {
        for (size_t id = 0; id < allowed.size(); ++id) allowed[id] = allows(int32_t(id)) ? 1 : 0;
    }
};

}  // namespace loom::engine
