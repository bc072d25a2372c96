#pragma once
// What the interpreter asks of the builtins: operators, attribute and item access (with the str,
// list and dict methods), filters, tests and the global functions. Each throws RenderFailure for
// a bad operand or argument; the interpreter adds the place.
#include <ctime>
#include <optional>
#include <string>

#include "engine/jinja/value.h"

namespace loom::engine::jinja {

// Python's binary operators: "+", "-", "*", "/", "//", "%", "**" (with "%" formatting a str).
Value binary_op(const std::string &op, const Value &left, const Value &right, Budget &budget);
// Unary "-" and "+".
Value unary_op(const std::string &op, const Value &operand);
// A list or tuple from any iterable: list items, dict keys, a string's code points; undefined is
// empty. RenderFailure for none, numbers and the rest.
std::vector<Value> iterate(const Value &v);

// The method `name` of a str, list or dict bound to it (a sandbox-refused one as an undefined whose
// use fails), or std::nullopt when the type has no such method.
std::optional<Value> bound_method(const Value &object, const std::string &name);
// Jinja2's getattr (obj.name): a method of a str, list or dict, else the dict's item, else an
// undefined naming what was missing. Methods that would change a list or dict, and names that
// start with '_', are undefined values whose use fails, as in transformers' sandbox.
Value get_attribute(const Value &object, const std::string &name);
// Jinja2's getitem (obj[key]): an index (negative from the end) or a slice of a list or str, a
// dict's item, else the attribute of that name, else undefined.
Value get_item(const Value &object, const Value &key, Budget &budget);
// obj[start:stop:step] of a list, tuple or str, with Python's bounds (none: the default).
Value slice(const Value &object, const Value &start, const Value &stop, const Value &step);

// The filter `name` on `input`; RenderFailure for an unknown filter.
Value apply_filter(const std::string &name, const Value &input, CallArgs &args);
bool has_filter(const std::string &name);
// The test `name` on `input` (`x is name(args)`); RenderFailure for an unknown test.
bool apply_test(const std::string &name, const Value &input, CallArgs &args);
bool has_test(const std::string &name);

// The functions every template sees: range, dict, namespace, cycler and joiner. The caller adds
// raise_exception and strftime_now (transformers passes them).
std::vector<std::pair<std::string, Value>> global_functions();
// raise_exception(message): fails the render with the template's message.
Value raise_exception_function();
// strftime_now(format): `now` formatted by the C library's strftime in the C locale.
Value strftime_now_function(std::tm now);

// Python's str.format(*args, **kwargs) and printf-style "fmt" % args.
std::string python_format(const std::string &format, const CallArgs &args);
std::string percent_format(const std::string &format, const Value &args, Budget &budget);

}  // namespace loom::engine::jinja
