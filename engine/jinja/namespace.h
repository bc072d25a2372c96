#pragma once
// namespace(...): the one value whose contents change, through {% set ns.attr = value %}; what
// lets a loop carry a value out of its scope. Its attributes may not hold a namespace (value.h).
#include <string>

#include "engine/jinja/value.h"

namespace loom::engine::jinja {

class Namespace : public Object {
  public:
    std::string type_name() const override { return "Namespace"; }
    std::optional<Value> attribute(const std::string &name) override;
    std::string repr(Budget &budget) const override;
    bool is_namespace() const override { return true; }
    // RenderFailure for a namespace as the value, or one past the value bounds.
    void set_attribute(const std::string &name, Value value);

  private:
    Dict attributes_;
};

}  // namespace loom::engine::jinja
