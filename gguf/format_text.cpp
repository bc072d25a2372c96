// format_text(): the human-readable description `loom gguf dump` prints.
#include <algorithm>

#include "loom/gguf.h"

namespace loom::gguf {
namespace {

constexpr size_t kShownElements = 8;  // of a long array
constexpr size_t kShownBytes = 100;   // of a long string
constexpr size_t kMaxKeyColumn = 48;

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
    const auto lead = uint8_t(s[i]);
    const size_t n = lead < 0x80                   ? 1
                     : lead >= 0xc2 && lead < 0xe0 ? 2
                     : lead >= 0xe0 && lead < 0xf0 ? 3
                     : lead >= 0xf0 && lead < 0xf5 ? 4
                                                   : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((uint8_t(s[i + k]) & 0xc0) != 0x80) return 0;
    }
    return n;
}

// s with escapes for backslashes, quotes, control characters and bytes that are not UTF-8, cut
// at a character boundary after kShownBytes (then followed by its size).
std::string escaped(std::string_view s) {
    std::string out;
    size_t i = 0;
    while (i < s.size() && i < kShownBytes) {
        const char ch = s[i];
        const size_t n = utf8_sequence_length(s, i);
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (ch == '\n') {
            out += "\\n";
        } else if (ch == '\t') {
            out += "\\t";
        } else if (n == 0 || uint8_t(ch) < 0x20 || ch == 0x7f) {
            out += fmt::format("\\x{:02x}", uint8_t(ch));
        } else {
            out.append(s.substr(i, n));
            i += n;
            continue;
        }
        ++i;
    }
    if (i < s.size()) out += fmt::format("... ({} bytes)", s.size());
    return out;
}

std::string quoted(std::string_view s) {
    return '"' + escaped(s) + '"';
}

std::string format_array(const Array &a);

template <typename T>
std::string format_element(const T &x) {
    if constexpr (std::is_same_v<T, std::string>) {
        return quoted(x);
    } else if constexpr (std::is_same_v<T, Array>) {
        return format_array(x);
    } else if constexpr (std::is_same_v<T, bool>) {
        return x ? "true" : "false";
    } else {
        return fmt::format("{}", x);  // int8/uint8 print as numbers, floats in shortest form
    }
}

std::string format_array(const Array &a) {
    return std::visit(
        [](const auto &items) {
            using T = typename std::decay_t<decltype(items)>::value_type;
            std::string out = "[";
            const size_t shown = std::min(items.size(), kShownElements);
            for (size_t i = 0; i < shown; ++i) {
                if (i > 0) out += ", ";
                out += format_element(static_cast<const T &>(items[i]));
            }
            if (shown < items.size()) out += fmt::format(", ... {} elements", items.size());
            return out + "]";
        },
        a.items);
}

std::string format_value(const Value &v) {
    return std::visit([](const auto &x) { return format_element(x); }, v);
}

std::string format_shape(const TensorInfo &t) {
    std::string out = "[";
    for (int d = 0; d < t.n_dims; ++d) out += fmt::format("{}{}", d > 0 ? ", " : "", t.ne[d]);
    return out + "]";
}

}  // namespace

std::string format_text(const Contents &c) {
    std::string out = fmt::format(
        "GGUF v{}: {} bytes, {} keys, {} tensors, alignment {}, data section at byte {}\n",
        c.version, c.file_size, c.metadata.size(), c.tensors.size(), c.alignment, c.data_offset);

    size_t key_width = 0, type_width = 0;
    for (const Metadata::Entry &e : c.metadata.entries()) {
        key_width = std::max(key_width, std::min(escaped(e.key).size(), kMaxKeyColumn));
        type_width = std::max(type_width, type_name(e.value).size());
    }
    out += fmt::format("\nmetadata:\n");
    for (const Metadata::Entry &e : c.metadata.entries()) {
        out += fmt::format("  {:<{}}  {:<{}}  {}\n", escaped(e.key), key_width, type_name(e.value),
                           type_width, format_value(e.value));
    }

    int64_t n_elements = 0;
    uint64_t n_bytes = 0;
    size_t name_width = 4, shape_width = 5;
    for (const TensorInfo &t : c.tensors) {
        n_elements += t.nelements();
        n_bytes += t.nbytes;
        name_width = std::max(name_width, escaped(t.name).size());
        shape_width = std::max(shape_width, format_shape(t).size());
    }
    if (c.tensors.empty()) return out + "\ntensors: none\n";
    out += fmt::format("\ntensors: {} elements, {} bytes\n", n_elements, n_bytes);
    out += fmt::format("  {:>5}  {:<{}}  {:<5}  {:<{}}  {:>12}  {:>12}\n", "#", "name", name_width,
                       "type", "shape", shape_width, "offset", "bytes");
    for (size_t i = 0; i < c.tensors.size(); ++i) {
        const TensorInfo &t = c.tensors[i];
        out += fmt::format("  {:>5}  {:<{}}  {:<5}  {:<{}}  {:>12}  {:>12}\n", i, escaped(t.name),
                           name_width, dtype_name(t.type), format_shape(t), shape_width, t.offset,
                           t.nbytes);
    }
    return out;
}

}  // namespace loom::gguf
