// Error messages of the parser: where a field is and what is wrong with it.
#include "gguf/cursor.h"

namespace loom::gguf {

std::string printable(std::string_view name) {
    constexpr size_t kMaxShown = 80;
    std::string out;
    for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
        const auto ch = uint8_t(name[i]);
        if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'') {
            out += char(ch);
        } else {
            out += fmt::format("\\x{:02x}", ch);
        }
    }
    if (name.size() > kMaxShown) out += fmt::format("... ({} bytes)", name.size());
    return out;
}

std::string Place::describe() const {
    const std::string_view section_name = section;
    if (section_name != "key" && section_name != "tensor") return section;
    std::string out = fmt::format("{} {}", section, index);
    if (!name.empty()) out += fmt::format(" '{}'", printable(name));
    if (element != kNoElement) out += fmt::format(" element {}", element);
    return out;
}

void Cursor::throw_at(uint64_t byte, const Place &place, const std::string &what) const {
    const std::string source =
        source_.empty() ? std::string() : fmt::format("{}: ", printable(source_));
    fail("gguf", "{}{} at byte {}: {}", source, place.describe(), byte, what);
}

}  // namespace loom::gguf
