// The tensor directory of a GGUF file and the checks of each tensor against the data section.
#include <algorithm>
#include <numeric>

#include "gguf/reader.h"

namespace loom::gguf {
namespace {

DType read_tensor_type(Cursor &c, const Place &place) {
    const uint64_t at = c.pos();
    const auto id = c.read<uint32_t>(place, "tensor type");
    if (const std::optional<DType> type = dtype_from_gguf_id(id)) return *type;
    if (const char *name = gguf_type_name(id)) {
        c.fail_at(at, place, "tensor type {} (GGUF type id {}) is not supported by Loom yet", name,
                  id);
    }
    c.fail_at(at, place, "unknown tensor type id {}", id);
}

// Shape, element count and byte size, each checked: a product that overflows 64 bits would
// otherwise wrap into a small, plausible size.
void read_shape(Cursor &c, uint32_t version, const Place &place, TensorInfo &t) {
    const uint64_t n_dims_at = c.pos();
    const auto n_dims = c.read<uint32_t>(place, "n_dims");
    if (n_dims < 1 || n_dims > uint32_t(kMaxDims)) {
        c.fail_at(n_dims_at, place, "n_dims {} is not in 1..{}", n_dims, kMaxDims);
    }
    t.n_dims = int(n_dims);
    const uint64_t dims_at = c.pos();
    for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t at = c.pos();
        const std::string field = fmt::format("ne[{}]", d);
        const auto ne = has_32bit_lengths(version) ? int64_t(c.read<uint32_t>(place, field))
                                                   : int64_t(c.read<uint64_t>(place, field));
        if (ne <= 0) c.fail_at(at, place, "ne[{}] = {} is not positive", d, ne);
        t.ne[d] = ne;
    }
    t.type = read_tensor_type(c, place);

    int64_t nelements = 1;
    for (int64_t ne : t.ne) {
        if (__builtin_mul_overflow(nelements, ne, &nelements)) {
            c.fail_at(dims_at, place, "the element count of [{}, {}, {}, {}] overflows 64 bits",
                      t.ne[0], t.ne[1], t.ne[2], t.ne[3]);
        }
    }
    const DTypeTraits &tr = traits(t.type);
    if (t.ne[0] % tr.block_size != 0) {
        c.fail_at(dims_at, place, "ne[0] = {} is not a multiple of the {} block size {}", t.ne[0],
                  tr.name, tr.block_size);
    }
    const uint64_t blocks = uint64_t(nelements / tr.block_size);
    if (__builtin_mul_overflow(blocks, uint64_t(tr.type_size), &t.nbytes)) {
        c.fail_at(dims_at, place, "the byte size of {} [{}, {}, {}, {}] overflows 64 bits", tr.name,
                  t.ne[0], t.ne[1], t.ne[2], t.ne[3]);
    }
}

// Every tensor lies inside the data section, at an aligned offset, and no two share a byte.
void check_data_section(const Cursor &c, const std::vector<TensorInfo> &tensors,
                        const std::vector<uint64_t> &offset_fields, uint32_t alignment,
                        uint64_t data_offset) {
    if (tensors.empty()) return;  // vocabulary-only files may end before the aligned data start
    if (data_offset > c.size()) {
        c.fail_at(
            c.pos(), Place("data section"),
            "the data section starts at byte {} (the directory's end aligned to {}), past the "
            "end of the file ({} bytes)",
            data_offset, alignment, c.size());
    }
    const uint64_t data_size = c.size() - data_offset;
    auto place = [&](size_t i) { return Place("tensor", i, tensors[i].name); };
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorInfo &t = tensors[i];
        if (t.offset % alignment != 0) {
            c.fail_at(offset_fields[i], place(i), "offset {} is not a multiple of the alignment {}",
                      t.offset, alignment);
        }
        if (t.offset > data_size || t.nbytes > data_size - t.offset) {
            c.fail_at(offset_fields[i], place(i),
                      "{} bytes at offset {} run past the end of the data section ({} bytes from "
                      "byte {})",
                      t.nbytes, t.offset, data_size, data_offset);
        }
    }
    std::vector<size_t> by_offset(tensors.size());
    std::iota(by_offset.begin(), by_offset.end(), size_t(0));
    std::sort(by_offset.begin(), by_offset.end(),
              [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
        const TensorInfo &prev = tensors[by_offset[k - 1]];
        const TensorInfo &cur = tensors[by_offset[k]];
        if (prev.offset + prev.nbytes > cur.offset) {
            c.fail_at(offset_fields[by_offset[k]], place(by_offset[k]),
                      "data [{}, {}) overlaps tensor {} '{}' at [{}, {})", cur.offset,
                      cur.offset + cur.nbytes, by_offset[k - 1], printable(prev.name), prev.offset,
                      prev.offset + prev.nbytes);
        }
    }
}

}  // namespace

uint64_t read_tensors(Cursor &c, const Header &h, uint32_t alignment, std::vector<TensorInfo> &out,
                      std::map<std::string, size_t, std::less<>> &index) {
    if (h.n_tensors > c.remaining() / min_tensor_info_size(h.version)) {
        constexpr uint64_t kNTensorsField = 8;  // after the magic and the version
        c.fail_at(kNTensorsField, Place(),
                  "n_tensors {} cannot fit in the {} bytes left after the metadata (a tensor info "
                  "takes at least {})",
                  h.n_tensors, c.remaining(), min_tensor_info_size(h.version));
    }
    out.reserve(size_t(h.n_tensors));
    std::vector<uint64_t> offset_fields;  // where each tensor's offset is, for its errors
    offset_fields.reserve(size_t(h.n_tensors));
    for (uint64_t i = 0; i < h.n_tensors; ++i) {
        Place place("tensor", i);
        TensorInfo t;
        t.record_offset = c.pos();
        const std::string_view name =
            read_string(c, h.version, place, "tensor name", kMaxTensorNameLength);
        if (name.empty()) c.fail_at(t.record_offset, place, "the tensor name is empty");
        place.name = name;
        if (name.find('\0') != std::string_view::npos) {
            c.fail_at(t.record_offset, place, "the tensor name contains a NUL byte");
        }
        if (const auto it = index.find(name); it != index.end()) {
            c.fail_at(t.record_offset, place,
                      "duplicate tensor name (tensor {} at byte {} has the same name)", it->second,
                      out[it->second].record_offset);
        }
        t.name = name;
        read_shape(c, h.version, place, t);
        offset_fields.push_back(c.pos());
        t.offset = c.read<uint64_t>(place, "offset");
        index.emplace(t.name, out.size());
        out.push_back(std::move(t));
    }
    // c.pos() is at most the file size, far below 2^63, so this cannot overflow.
    const uint64_t data_offset = (c.pos() + alignment - 1) / alignment * alignment;
    check_data_section(c, out, offset_fields, alignment, data_offset);
    return data_offset;
}

}  // namespace loom::gguf
