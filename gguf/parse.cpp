// parse(): a GGUF file's parts in file order, then the checks that need all of them.
#include "gguf/reader.h"

namespace loom::gguf {
namespace {

constexpr std::string_view kAlignmentKey = "general.alignment";

uint32_t read_alignment(const Cursor &c, const Metadata &metadata,
                        const std::vector<uint64_t> &key_offsets) {
    const auto entries = metadata.entries();
    for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].key != kAlignmentKey) continue;
        const Place place("key", i, kAlignmentKey);
        const auto *alignment = std::get_if<uint32_t>(&entries[i].value);
        if (alignment == nullptr) {
            c.fail_at(key_offsets[i], place, "the alignment is {}, not uint32",
                      type_name(entries[i].value));
        }
        if (!std::has_single_bit(*alignment)) {
            c.fail_at(key_offsets[i], place, "the alignment {} is not a power of two", *alignment);
        }
        return *alignment;
    }
    return kDefaultAlignment;
}

}  // namespace

Contents parse(std::span<const std::byte> file, std::string_view source) {
    Cursor c(file, source);
    Contents out;
    out.file_size = file.size();
    const Header h = read_header(c);
    out.version = h.version;
    std::vector<uint64_t> key_offsets;
    read_metadata(c, h, out.metadata, key_offsets);
    out.alignment = read_alignment(c, out.metadata, key_offsets);
    out.data_offset = read_tensors(c, h, out.alignment, out.tensors, out.tensor_index_);
    return out;
}

const TensorInfo *Contents::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

}  // namespace loom::gguf
