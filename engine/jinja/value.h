#pragma once
// The values of the template language, with the semantics Python gives them in Jinja2: none and
// undefined, bool, int, float, str, list and tuple, dict (insertion order), callables (macros,
// builtins) and objects with attributes (loop, namespace, cycler).
//
// Lists and dicts are shared, as Python's are: copying a Value copies a pointer. They never
// change once built (the sandbox Hugging Face renders in forbids append, update, pop...); only a
// namespace's attributes change, and a namespace may not be put inside a list, dict or another
// namespace. So values hold no cycles, and each container knows its exact nesting depth and how
// many elements it reaches (shared parts counted each time), both bounded at construction: every
// walk over a value (printing, comparing, tojson) is bounded with it.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace loom::engine::jinja {

// How deep values nest and how many elements one value reaches (a JSON schema nests a few tens
// deep; a long conversation reaches some ten thousand elements).
inline constexpr int kMaxValueDepth = 256;
inline constexpr int64_t kMaxValueElements = int64_t(1) << 22;
// The longest string a render may build (prompts are megabytes at most).
inline constexpr size_t kMaxStringBytes = size_t(32) << 20;

// A failure while rendering, without a place: the interpreter adds the template's line and
// column (TemplateError, template.h). `raised` marks the template's own raise_exception(msg).
class RenderFailure : public std::runtime_error {
  public:
    explicit RenderFailure(const std::string &message, bool raised = false)
        : std::runtime_error(message), raised_(raised) {}
    bool raised() const { return raised_; }

  private:
    bool raised_;
};

[[noreturn]] void render_fail(const std::string &message);

// The work one render may still do: every evaluated node, every element a walk visits and every
// 256 bytes of string built cost a step.
class Budget {
  public:
    explicit Budget(int64_t steps) : steps_(steps), left_(steps) {}
    void charge(int64_t steps) {
        left_ -= steps;
        if (left_ < 0) exhausted();
    }
    void charge_bytes(size_t bytes) { charge(1 + int64_t(bytes >> 8)); }

  private:
    [[noreturn]] void exhausted() const;
    int64_t steps_;
    int64_t left_;
};

class Value;
class Dict;
class Object;
struct Function;
struct CallArgs;

struct ListData {
    std::vector<Value> items;
    bool is_tuple = false;
    int depth = 1;
    int64_t elements = 1;
};

class Value {
  public:
    enum class Kind : uint8_t {
        undefined,
        none,
        boolean,
        integer,
        floating,
        string,
        list,  // list or tuple
        dict,
        function,
        object,
    };

    Value() = default;  // undefined, without a hint
    Value(bool b) : data_(b) {}
    Value(int i) : data_(int64_t(i)) {}
    Value(int64_t i) : data_(i) {}
    Value(double f) : data_(f) {}
    Value(std::string s) : data_(std::make_shared<const std::string>(std::move(s))) {}
    Value(std::string_view s) : Value(std::string(s)) {}
    Value(const char *s) : Value(std::string(s)) {}

    // Undefined with the message its use reports ("'x' is undefined"). A strict one also fails
    // when read further (.name, [key]), as every undefined does in Jinja2; Loom's others give
    // undefined again there (attributes.cpp says which are strict).
    static Value undefined(std::string hint, bool strict = false);
    static Value none() { return Value(None{}); }
    // RenderFailure when the list would nest or reach more than the bounds, or holds a namespace.
    static Value list(std::vector<Value> items);
    static Value tuple(std::vector<Value> items);
    static Value list_from(std::shared_ptr<const ListData> data);  // data's extent already known
    static Value dict(Dict dict);
    static Value function(std::string name, std::function<Value(CallArgs &)> call);
    static Value object(std::shared_ptr<Object> object);

    Kind kind() const { return Kind(data_.index()); }
    bool is_undefined() const { return kind() == Kind::undefined; }
    bool is_none() const { return kind() == Kind::none; }
    bool is_bool() const { return kind() == Kind::boolean; }
    bool is_int() const { return kind() == Kind::integer; }  // bool is not (Jinja's integer test)
    bool is_float() const { return kind() == Kind::floating; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }
    bool is_string() const { return kind() == Kind::string; }
    bool is_list() const { return kind() == Kind::list; }
    bool is_tuple() const { return is_list() && list_data().is_tuple; }
    bool is_dict() const { return kind() == Kind::dict; }
    bool is_function() const { return kind() == Kind::function; }
    bool is_object() const { return kind() == Kind::object; }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const { return std::get<int64_t>(data_); }  // int, or bool as 0/1: to_int
    double as_float() const { return std::get<double>(data_); }
    const std::string &str() const { return *std::get<StringPtr>(data_); }
    const std::vector<Value> &items() const { return list_data().items; }
    const ListData &list_data() const { return *std::get<ListPtr>(data_); }
    const Dict &dict() const { return *std::get<DictPtr>(data_); }
    const Function &func() const { return *std::get<FunctionPtr>(data_); }
    Object &obj() const { return *std::get<ObjectPtr>(data_); }
    const std::string &undefined_hint() const;
    bool undefined_is_strict() const { return std::get<Undefined>(data_).strict; }

    // The int of an int or bool; the double of any number.
    int64_t to_int() const { return is_bool() ? int64_t(as_bool()) : as_int(); }
    double to_double() const;

    // Nesting depth (1 for a scalar) and elements reached (1 for a scalar).
    int depth() const;
    int64_t elements() const;
    bool is_namespace() const;
    // The same pointer (Python's `is` for containers; equal scalars for the rest).
    bool same_as(const Value &other) const;

    // Python's type name: "str", "int", "list", "dict", "NoneType", "Undefined"...
    std::string type_name() const;

  private:
    struct Undefined {
        std::shared_ptr<const std::string> hint;
        bool strict;  // false in Value() too: variant value-initializes its first alternative
    };
    struct None {};
    using StringPtr = std::shared_ptr<const std::string>;
    using ListPtr = std::shared_ptr<const ListData>;
    using DictPtr = std::shared_ptr<const Dict>;
    using FunctionPtr = std::shared_ptr<const Function>;
    using ObjectPtr = std::shared_ptr<Object>;
    explicit Value(None n) : data_(n) {}

    // The order of the alternatives is Kind's.
    std::variant<Undefined, None, bool, int64_t, double, StringPtr, ListPtr, DictPtr, FunctionPtr,
                 ObjectPtr>
        data_;
};

// A dict: entries in insertion order, found through a hash of the key. Keys are hashable
// values (str, numbers, bool, none, undefined, tuples of those); 1, 1.0 and True are the same
// key.
class Dict {
  public:
    const Value *find(const Value &key) const;
    const Value *find(std::string_view key) const;
    const Value *find(const std::string &key) const { return find(std::string_view(key)); }
    const Value *find(const char *key) const { return find(std::string_view(key)); }
    // Replaces the value of an existing key in place, else appends. RenderFailure when the
    // dict would nest or reach more than the bounds, or for a namespace as the value.
    void set(const Value &key, Value value);
    size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    const std::vector<std::pair<Value, Value>> &entries() const { return entries_; }
    int depth() const { return depth_; }
    int64_t elements() const { return elements_; }

  private:
    std::vector<std::pair<Value, Value>> entries_;
    std::unordered_map<std::string, size_t> index_;  // hash_key(key) -> position in entries_
    int depth_ = 1;
    int64_t elements_ = 1;
};

// The key a dict files `key` under; RenderFailure for an unhashable key (a list, a dict).
std::string hash_key(const Value &key);

// Arguments of a call, as written: positional, then keyword.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
    Budget &budget;
};

struct Function {
    std::string name;
    std::function<Value(CallArgs &)> call;
};

// A value with attributes of its own (loop, namespace, cycler, joiner).
class Object {
  public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;
    // The attribute, or std::nullopt when there is none.
    virtual std::optional<Value> attribute(const std::string &name) = 0;
    virtual std::string repr(Budget &budget) const;
    virtual bool is_namespace() const { return false; }
    // obj(args): RenderFailure unless the object is callable (a recursive loop is).
    virtual bool is_callable() const { return false; }
    virtual Value call(CallArgs &args);
};

// A call's arguments bound to a builtin's parameter names, as Python binds them: positional
// first, then by keyword. RenderFailure for too many, an unknown keyword or one given twice.
class BoundArgs {
  public:
    BoundArgs(const CallArgs &args, std::string_view function,
              std::initializer_list<std::string_view> params);
    // The argument of parameter `i`, or nullptr when not passed.
    const Value *get(size_t i) const { return i < values_.size() ? values_[i] : nullptr; }
    Value get_or(size_t i, Value fallback) const {
        const Value *v = get(i);
        return v ? *v : std::move(fallback);
    }

  private:
    std::vector<const Value *> values_;
};

// Python's truth: false for undefined, none, False, 0, 0.0, "" and empty containers.
bool truthy(const Value &v);
// Python's ==: 1 == 1.0 == True, lists and dicts element by element; undefined equals undefined.
bool equals(const Value &a, const Value &b, Budget &budget);
// Python's < on numbers, strings (by code point) and sequences; RenderFailure for other types.
bool less_than(const Value &a, const Value &b, Budget &budget);
// Python's `a in b`: a substring, an element of a list, a key of a dict.
bool contains(const Value &container, const Value &item, Budget &budget);

// What {{ v }} prints: str(v) (undefined prints nothing, none "None", floats as Python's repr).
std::string to_str(const Value &v, Budget &budget);
// Python's repr(v): strings quoted, [1, 'a'], {'k': 2}, (1,), True, None.
std::string repr(const Value &v, Budget &budget);

}  // namespace loom::engine::jinja
