// libFuzzer target for the GGUF reader: any bytes either parse or are rejected with a
// loom::Error. What parses is also described (text, JSON), read through the integer getters,
// and the first and last byte of every tensor are touched, so that ASan catches a tensor the
// validation let out of the file.
#include <cstddef>
#include <cstdint>

#include "loom/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace loom::gguf;
    try {
        const Contents c = parse({reinterpret_cast<const std::byte *>(data), size});
        format_text(c);
        format_json(c);
        for (const Metadata::Entry &e : c.metadata.entries()) {
            try {
                c.metadata.get_integer<int32_t>(e.key);
            } catch (const loom::Error &) {
            }
        }
        volatile uint8_t sink = 0;
        for (const TensorInfo &t : c.tensors) {
            sink = sink + data[c.data_offset + t.offset] +
                   data[c.data_offset + t.offset + t.nbytes - 1];
        }
    } catch (const loom::Error &) {
    }
    return 0;
}
