// The model-loading fuzz target (fuzz/targets.h): a real small model whose metadata and tensor
// directory the input rewrites, so that the file is always a well-formed GGUF that lies.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "engine/context/context.h"
#include "fuzz/targets.h"
#include "loom/error.h"

namespace loom::fuzz {
namespace {

// The input, read front to back; past its end every read gives 0.
class Reader {
  public:
    Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool done() const { return at_ >= size_; }
    template <typename T>
    T take() {
        T v{};
        const size_t n = std::min(sizeof(T), size_ - std::min(at_, size_));
        if (n > 0) std::memcpy(&v, data_ + at_, n);
        at_ += sizeof(T);
        return v;
    }
    uint8_t byte() { return take<uint8_t>(); }
    std::string text(size_t max) {
        const size_t n = std::min<size_t>(byte() % (max + 1), size_ - std::min(at_, size_));
        std::string s(reinterpret_cast<const char *>(data_ + std::min(at_, size_)), n);
        at_ += n;
        return s;
    }

  private:
    const uint8_t *data_;
    size_t size_, at_ = 0;
};

// Values that break assumptions: zero, one, off by one, sign, width limits, far past memory.
int64_t lying_integer(Reader &r, int64_t original) {
    static constexpr int64_t kValues[] = {0,
                                          1,
                                          2,
                                          3,
                                          -1,
                                          7,
                                          255,
                                          65536,
                                          std::numeric_limits<int32_t>::max(),
                                          std::numeric_limits<int32_t>::min(),
                                          int64_t(std::numeric_limits<uint32_t>::max()),
                                          int64_t(1) << 40,
                                          std::numeric_limits<int64_t>::max()};
    const uint8_t pick = r.byte();
    switch (pick % 4) {
        case 0:
            return kValues[pick / 4 % std::size(kValues)];
        case 1:  // wrapping, as every lie may start from an earlier one such as 2^63 - 1
            return int64_t(uint64_t(original) + uint64_t(int64_t(int8_t(r.byte()))));
        case 2:
            return int64_t(uint64_t(original) * uint64_t(1 + r.byte() % 4));
        default:
            return r.take<int32_t>();
    }
}

gguf::Value as_integer_of_some_type(Reader &r, int64_t v) {
    switch (r.byte() % 5) {
        case 0:
            return uint32_t(v);
        case 1:
            return int32_t(v);
        case 2:
            return uint64_t(v);
        case 3:
            return int64_t(v);
        default:
            return std::to_string(v);  // the wrong type altogether
    }
}

int64_t integer_value(const gguf::Value *v) {
    if (v == nullptr) return 0;
    return std::visit(
        [](const auto &x) -> int64_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_integral_v<T>) {
                return int64_t(x);
            } else {
                return 0;
            }
        },
        *v);
}

// Keys after the architecture's name ("llama.") and the tokenizer's.
constexpr const char *kArchIntegerKeys[] = {"context_length",
                                            "embedding_length",
                                            "block_count",
                                            "feed_forward_length",
                                            "attention.head_count",
                                            "attention.head_count_kv",
                                            "rope.dimension_count",
                                            "attention.key_length",
                                            "attention.value_length",
                                            "expert_count",
                                            "expert_used_count",
                                            "vocab_size",
                                            "expert_feed_forward_length",
                                            "attention.sliding_window",
                                            "attention.sliding_window_pattern",
                                            "rope.scaling.original_context_length"};
constexpr const char *kArchFloatKeys[] = {"attention.layer_norm_rms_epsilon",
                                          "attention.layer_norm_epsilon",
                                          "rope.freq_base",
                                          "rope.scaling.factor",
                                          "logit_scale",
                                          "rope.freq_base_swa",
                                          "attn_logit_softcapping",
                                          "final_logit_softcapping"};
constexpr const char *kTokenIdKeys[] = {
    "tokenizer.ggml.bos_token_id",       "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id",   "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.eot_token_id"};
constexpr const char *kArrayKeys[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                                      "tokenizer.ggml.token_type", "tokenizer.ggml.merges"};
constexpr const char *kArchitectures[] = {
    "llama",     "qwen2",   "qwen3", "gpt2", "deepseek2", "qwen2moe", "qwen3moe", "granite",
    "command-r", "cohere2", "olmo2", "phi3", "gemma2",    "gemma3",   "gpt-oss",  "bogus"};
constexpr const char *kTokenizerModels[] = {"llama", "gpt2", "bert", "none", "t5", ""};
constexpr DType kTensorTypes[] = {DType::F32,   DType::F16,    DType::BF16,  DType::Q8_0,
                                  DType::Q4_0,  DType::Q4_K,   DType::Q6_K,  DType::I32,
                                  DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS};

struct Tensor {
    std::string name;
    DType type;
    int n_dims;
    int64_t ne[4];
    const std::byte *data;  // the original bytes, or null: zeros
};

struct Model {
    gguf::Metadata metadata;
    std::vector<Tensor> tensors;
    std::string arch() const {
        const gguf::Value *v = metadata.find("general.architecture");
        return v != nullptr && std::holds_alternative<std::string>(*v) ? std::get<std::string>(*v)
                                                                       : "";
    }
};

void remove_key(gguf::Metadata &m, std::string_view key) {
    gguf::Metadata kept;
    for (const auto &e : m.entries()) {
        if (e.key != key) kept.set(e.key, e.value);
    }
    m = std::move(kept);
}

// Arrays grow to at most this many elements (four times the base vocabulary): repeated growth
// would otherwise compound past the fuzzer's memory limit.
constexpr int64_t kMaxArray = 2048;

void resize_array(gguf::Value &v, size_t n) {
    if (!std::holds_alternative<gguf::Array>(v)) return;
    std::visit([n](auto &items) { items.resize(n); }, std::get<gguf::Array>(v).items);
}

// One lie, chosen and shaped by the input.
void mutate(Model &m, Reader &r) {
    const std::string prefix = m.arch() + ".";
    switch (r.byte() % 10) {
        case 0: {
            const std::string key =
                prefix + kArchIntegerKeys[r.byte() % std::size(kArchIntegerKeys)];
            const int64_t v = lying_integer(r, integer_value(m.metadata.find(key)));
            m.metadata.set(key, as_integer_of_some_type(r, v));
            break;
        }
        case 1: {
            static constexpr float kFloats[] = {0.0f, -1.0f, 1e-30f, 1e30f, NAN, INFINITY};
            m.metadata.set(prefix + kArchFloatKeys[r.byte() % std::size(kArchFloatKeys)],
                           kFloats[r.byte() % std::size(kFloats)]);
            break;
        }
        case 2: {
            const char *key = kArrayKeys[r.byte() % std::size(kArrayKeys)];
            const gguf::Value *v = m.metadata.find(key);
            if (v == nullptr || !std::holds_alternative<gguf::Array>(*v)) break;
            gguf::Value copy = *v;
            const auto n = int64_t(std::get<gguf::Array>(copy).size());
            resize_array(copy, size_t(std::clamp<int64_t>(lying_integer(r, n), 0, kMaxArray)));
            m.metadata.set(key, std::move(copy));
            break;
        }
        case 3: {
            const char *key = kTokenIdKeys[r.byte() % std::size(kTokenIdKeys)];
            m.metadata.set(key, as_integer_of_some_type(r, lying_integer(r, 1)));
            break;
        }
        case 4: {
            if (m.tensors.empty()) break;
            Tensor &t = m.tensors[r.byte() % m.tensors.size()];
            const int dim = r.byte() % 4;
            t.n_dims = std::max(t.n_dims, dim + 1);
            t.ne[dim] = std::clamp<int64_t>(lying_integer(r, t.ne[dim]), 0, 1 << 12);
            t.data = nullptr;
            break;
        }
        case 5: {
            if (m.tensors.empty()) break;
            Tensor &t = m.tensors[r.byte() % m.tensors.size()];
            t.type = kTensorTypes[r.byte() % std::size(kTensorTypes)];
            t.data = nullptr;
            break;
        }
        case 6: {
            const auto entries = m.metadata.entries();
            if (!entries.empty() && r.byte() % 2 == 0) {
                remove_key(m.metadata, std::string(entries[r.byte() % entries.size()].key));
            } else if (!m.tensors.empty()) {
                m.tensors.erase(m.tensors.begin() + r.byte() % m.tensors.size());
            }
            break;
        }
        case 7: {  // another architecture, its keys renamed with it
            const std::string arch = kArchitectures[r.byte() % std::size(kArchitectures)];
            gguf::Metadata renamed;
            for (const auto &e : m.metadata.entries()) {
                const bool ours = e.key.starts_with(prefix);
                renamed.set(ours ? arch + "." + e.key.substr(prefix.size()) : e.key, e.value);
            }
            renamed.set("general.architecture", arch);
            m.metadata = std::move(renamed);
            break;
        }
        case 8: {  // a BPE vocabulary whose merges name pieces that may not exist
            m.metadata.set("tokenizer.ggml.model", kTokenizerModels[r.byte() % 2]);
            std::vector<std::string> merges;
            for (int i = r.byte() % 8; i > 0; --i) merges.push_back(r.text(12));
            m.metadata.set("tokenizer.ggml.merges", gguf::Array{std::move(merges)});
            break;
        }
        default: {
            const char *keys[] = {"tokenizer.ggml.model", "tokenizer.ggml.pre",
                                  "tokenizer.chat_template"};
            const size_t k = r.byte() % std::size(keys);
            m.metadata.set(keys[k], k == 0
                                        ? kTokenizerModels[r.byte() % std::size(kTokenizerModels)]
                                        : r.text(64));
            break;
        }
    }
}

// The bytes tensors whose shape or type changed read: zeros, up to this much per tensor (an
// input that makes a tensor larger is skipped: writing it would cost more than the lie tests).
constexpr size_t kZeroBytes = size_t(8) << 20;

}  // namespace

struct BaseModel {
    std::vector<std::unique_ptr<gguf::File>> files;
    std::vector<Model> models;  // the input's flags pick one
    std::vector<std::byte> zeros;
    std::string scratch_path;
};

// Three bases: a Llama (stories260K), and llama.cpp's gemma2 and gpt-oss fixtures for the
// sliding-window memory, soft-capping, sinks, biased experts and MXFP4 weights. Each is cut to
// two layers (a full one and a windowed one where it has both): a smaller file to write per
// input, still more than one layer.
std::shared_ptr<BaseModel> load_base_model(const std::string &root) {
    auto base = std::make_shared<BaseModel>();
    for (const char *path :
         {"/../shared/models/stories260K.gguf", "/../shared/fixtures/gemma2/model.gguf",
          "/../shared/fixtures/gpt-oss/model.gguf"}) {
        const auto &file = base->files.emplace_back(std::make_unique<gguf::File>(root + path));
        Model &m = base->models.emplace_back();
        m.metadata = file->metadata();
        m.metadata.set(m.arch() + ".block_count", uint32_t(2));
        for (const gguf::TensorInfo &t : file->tensors()) {
            if (t.name.starts_with("blk.") && !t.name.starts_with("blk.0.") &&
                !t.name.starts_with("blk.1.")) {
                continue;
            }
            m.tensors.push_back({t.name,
                                 t.type,
                                 t.n_dims,
                                 {t.ne[0], t.ne[1], t.ne[2], t.ne[3]},
                                 file->tensor_data(t).data()});
        }
    }
    base->zeros.resize(kZeroBytes);
    // A file in memory where there is a tmpfs: each input writes one and maps it.
    std::string scratch_dir = "/tmp";
    if (const char *dir = std::getenv("TMPDIR"); dir != nullptr) {
        scratch_dir = dir;
    } else if (std::filesystem::is_directory("/dev/shm")) {
        scratch_dir = "/dev/shm";
    }
    base->scratch_path = fmt::format("{}/loom-model-fuzz-{}.gguf", scratch_dir, ::getpid());
    return base;
}

void model_load_one_input(const BaseModel &base, const uint8_t *data, size_t size) {
    Reader r(data, size);
    const uint8_t flags = r.byte();
    Model m = base.models[size_t(flags >> 2) % base.models.size()];
    for (int i = 0; i < 16 && !r.done(); ++i) mutate(m, r);

    gguf::Writer writer;
    for (const auto &e : m.metadata.entries()) writer.set(e.key, e.value);
    try {
        for (const Tensor &t : m.tensors) {
            // Rows of part of a block cannot be written (nor read: the reader refuses them).
            if (t.ne[0] % traits(t.type).block_size != 0) return;
            if (row_size(t.type, t.ne[0]) * size_t(t.ne[1] * t.ne[2] * t.ne[3]) > kZeroBytes)
                return;
            writer.add_tensor(t.name, t.type, std::span<const int64_t>(t.ne, size_t(t.n_dims)),
                              t.data != nullptr ? t.data : base.zeros.data());
        }
        writer.write(base.scratch_path);
    } catch (const Error &) {
        return;  // the writer refuses what no reader would take (a shape not whole blocks)
    }

    try {
        const auto model =
            engine::Model::load(base.scratch_path, {.repack = (flags & 1) != 0, .progress = false});
        engine::Context ctx(*model, {.n_ctx = 32,
                                     .n_batch = 8,
                                     .n_ubatch = 8,
                                     .n_threads = 1,
                                     .flash_attn = (flags & 2) != 0});
        const std::vector<int32_t> ids = model->vocab().tokenize("Once upon a time", true, false);
        engine::Batch batch;
        for (size_t i = 0; i < std::min<size_t>(ids.size(), 8); ++i) {
            batch.add(ids[i], engine::Pos(i), 0, i + 1 == std::min<size_t>(ids.size(), 8));
        }
        if (batch.size() > 0) {
            ctx.decode(batch);
            volatile float sum = 0.0f;  // every logit read, so that a short row is an ASan report
            for (const float x : ctx.logits(0)) sum = sum + x;
        }
        model->vocab().detokenize(ids, true);
    } catch (const Error &) {
    }
}

}  // namespace loom::fuzz
