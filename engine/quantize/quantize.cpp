#include "engine/quantize/quantize.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "engine/quantize/convert_rows.h"
#include "engine/quantize/tensor_types.h"
#include "loom/error.h"
#include "loom/gguf.h"

namespace loom::engine {
namespace {

namespace fs = std::filesystem;

// ggml's GGML_QNT_VERSION, the block-format revision llama-quantize records in every file.
constexpr uint32_t kQuantizationVersion = 2;

// Refuses an output that would overwrite the input or cannot be created, before any work.
void check_paths(const std::string &in_path, const std::string &out_path) {
    std::error_code ec;
    if (out_path == in_path || fs::equivalent(in_path, out_path, ec)) {
        fail("quantize", "the output '{}' is the input file: write to another path", out_path);
    }
    if (fs::is_directory(out_path, ec))
        fail("quantize", "the output '{}' is a directory", out_path);
    const fs::path parent = fs::path(out_path).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    if (!fs::is_directory(dir, ec)) {
        fail("quantize", "cannot write '{}': the folder '{}' does not exist", out_path, dir);
    }
    if (access(dir.c_str(), W_OK) != 0 ||
        (fs::exists(out_path, ec) && access(out_path.c_str(), W_OK) != 0)) {
        fail("quantize", "cannot write '{}': {}", out_path, std::strerror(errno));
    }
}

// The input's keys in order, then general.quantization_version and general.file_type, moved
// to the end as llama.cpp's gguf_set_val_u32 does (it removes a key and appends it). Split keys
// are dropped: the output is one file.
gguf::Metadata output_metadata(const gguf::Metadata &in, const FileType &file_type) {
    constexpr std::string_view kReplaced[] = {"general.quantization_version", "general.file_type",
                                              "split.no", "split.count", "split.tensors.count"};
    gguf::Metadata out;
    for (const gguf::Metadata::Entry &e : in.entries()) {
        if (std::ranges::find(kReplaced, e.key) == std::end(kReplaced)) out.set(e.key, e.value);
    }
    out.set("general.quantization_version", kQuantizationVersion);
    out.set("general.file_type", file_type.id);
    return out;
}

// Every conversion must be possible before any work starts.
void check_conversions(std::span<const gguf::TensorInfo *const> ordered,
                       std::span<const TensorTypeChoice> choices, bool allow_requantize) {
    for (size_t i = 0; i < ordered.size(); ++i) {
        const gguf::TensorInfo &t = *ordered[i];
        if (choices[i].type == t.type) continue;
        if (traits(t.type).is_quantized && !allow_requantize) {
            fail("quantize",
                 "tensor '{}' is already {}: requantizing loses accuracy (pass "
                 "--allow-requantize to do it anyway)",
                 t.name, dtype_name(t.type));
        }
        if (traits(t.type).to_float == nullptr) {
            fail("quantize", "tensor '{}' is {}, which cannot be converted to {}", t.name,
                 dtype_name(t.type), dtype_name(choices[i].type));
        }
    }
}

int thread_count(int requested) {
    if (requested > 0) return requested;
    return int(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

QuantizeReport quantize_file(const std::string &in_path, const std::string &out_path,
                             const QuantizeOptions &options) {
    LOOM_ASSERT(options.file_type != nullptr);
    const FileType &file_type = *options.file_type;
    check_paths(in_path, out_path);
    const gguf::File in(in_path);
    if (in.metadata().get_integer_optional<uint32_t>("split.count").value_or(1) > 1) {
        fail("quantize", "'{}' is one part of a split model: merge the parts first", in_path);
    }

    const std::vector<const gguf::TensorInfo *> ordered = quantize_order(in.tensors());
    const std::vector<TensorTypeChoice> choices = choose_tensor_types(
        ordered, QuantModelFacts::from_gguf(in.metadata()), file_type, options.pure);
    check_conversions(ordered, choices, options.allow_requantize);

    QuantizeReport report;
    report.file_bytes_in = in.contents().file_size;
    for (const gguf::TensorInfo *t : ordered) report.bytes_in += t->nbytes;

    gguf::Writer writer;
    writer.metadata() = output_metadata(in.metadata(), file_type);
    std::vector<std::unique_ptr<std::byte[]>> converted;  // alive until the file is written
    const int n_threads = thread_count(options.n_threads);
    uint64_t bytes_done = 0;
    for (size_t i = 0; i < ordered.size(); ++i) {
        const gguf::TensorInfo &t = *ordered[i];
        const DType to = choices[i].type;
        const std::span<const std::byte> src = in.tensor_data(t);
        const int64_t n_rows = t.nelements() / t.ne[0];
        const void *data = src.data();
        uint64_t bytes_out = t.nbytes;
        if (to != t.type) {
            bytes_out = row_size(to, t.ne[0]) * uint64_t(n_rows);
            converted.push_back(std::make_unique_for_overwrite<std::byte[]>(bytes_out));
            convert_rows(t.type, src.data(), to, converted.back().get(), t.ne[0], n_rows,
                         n_threads);
            data = converted.back().get();
        }
        // Dimensions as ggml writes them: without trailing 1s.
        int n_dims = t.n_dims;
        while (n_dims > 1 && t.ne[n_dims - 1] == 1) --n_dims;
        writer.add_tensor(t.name, to, std::span<const int64_t>(t.ne, size_t(n_dims)), data);

        report.tensors.push_back({.name = t.name,
                                  .from = t.type,
                                  .to = to,
                                  .wanted = choices[i].wanted,
                                  .ne0 = t.ne[0],
                                  .bytes_in = t.nbytes,
                                  .bytes_out = bytes_out});
        report.n_elements += uint64_t(t.nelements());
        report.bytes_out += bytes_out;
        bytes_done += t.nbytes;
        if (options.progress) {
            options.progress({.tensor = t.name,
                              .tensors_done = i + 1,
                              .n_tensors = ordered.size(),
                              .bytes_done = bytes_done,
                              .bytes_total = report.bytes_in});
        }
    }

    // Written under a temporary name and renamed, so that a failure never leaves a partial
    // file at out_path (the writer removes its own partial file).
    const std::string tmp_path = fmt::format("{}.tmp.{}", out_path, getpid());
    writer.write(tmp_path);
    std::error_code ec;
    fs::rename(tmp_path, out_path, ec);
    if (ec) {
        const std::string why = ec.message();
        fs::remove(tmp_path, ec);
        fail("quantize", "cannot write '{}': {}", out_path, why);
    }
    report.file_bytes_out = fs::file_size(out_path);
    return report;
}

}  // namespace loom::engine
