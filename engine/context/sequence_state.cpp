// The file: "LOOMSEQ" 0 | u32 version | 32 bytes: SHA-256 of the model's GGUF header |
// u64 n + n i32 tokens | u64 n + n f32 logits | u64 n + n bytes of generator state |
// u64 n + n bytes of Context::save_seq. Integers little-endian, as the machine writes them.
#include "engine/context/sequence_state.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/memory/state_io.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

constexpr std::array<char, 8> kMagic = {'L', 'O', 'O', 'M', 'S', 'E', 'Q', '\0'};
// 2: a quantized cache's K and V are stored Hadamard-rotated (KvCache::k_rotation), so a
// version 1 file of such a cache would be read wrong.
constexpr uint32_t kVersion = 2;
using Digest = std::array<unsigned char, SHA256_DIGEST_LENGTH>;

Digest header_digest(const Model &model) {
    const std::span<const std::byte> file = model.file().bytes();
    const size_t header = std::min<size_t>(file.size(), model.file().contents().data_offset);
    Digest d;
    SHA256(reinterpret_cast<const unsigned char *>(file.data()), header, d.data());
    return d;
}

std::string hex(const Digest &d) {
    std::string out;
    for (unsigned char c : d) out += fmt::format("{:02x}", c);
    return out;
}

template <typename T>
void put_array(StateWriter &out, std::span<const T> values) {
    out.put(uint64_t(values.size()));
    out.bytes(values.data(), values.size_bytes());
}

template <typename T>
std::vector<T> get_array(StateReader &in) {
    std::vector<T> values(in.count(sizeof(T)));
    in.bytes(values.data(), values.size() * sizeof(T));
    return values;
}

}  // namespace

std::string model_identity(const Model &model) {
    return hex(header_digest(model));
}

void save_sequence(const std::string &path, Context &ctx, SeqId seq, const SequenceState &state) {
    StateWriter out;
    out.bytes(kMagic.data(), kMagic.size());
    out.put(kVersion);
    const Digest d = header_digest(ctx.model());
    out.bytes(d.data(), d.size());
    put_array<int32_t>(out, state.tokens);
    put_array<float>(out, state.logits);
    put_array<char>(out, state.rng);
    put_array<std::byte>(out, ctx.save_seq(seq));
    const std::vector<std::byte> bytes = out.take();

    const std::string partial = path + ".partial";
    {
        std::ofstream file(partial, std::ios::binary | std::ios::trunc);
        file.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
        if (!file) fail("state", "{}: cannot write it", partial);
    }
    std::error_code ec;
    std::filesystem::rename(partial, path, ec);
    if (ec) fail("state", "{}: cannot rename {} to it: {}", path, partial, ec.message());
}

SequenceState load_sequence(const std::string &path, Context &ctx, SeqId seq) {
    SavedSequence saved = read_sequence(path, ctx);
    ctx.place_seq(seq, saved.cells, path);
    return std::move(saved.state);
}

SequenceState load_sequence(std::span<const std::byte> bytes, std::string_view what, Context &ctx,
                            SeqId seq) {
    SavedSequence saved = read_sequence(bytes, what, ctx);
    ctx.place_seq(seq, saved.cells, what);
    return std::move(saved.state);
}

SavedSequence read_sequence(const std::string &path, const Context &ctx) {
    std::ifstream file(path, std::ios::binary);
    if (!file) fail("state", "{}: cannot open it", path);
    std::vector<char> chars((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    if (file.bad()) fail("state", "{}: cannot read it", path);
    return read_sequence(std::as_bytes(std::span(chars)), path, ctx);
}

SavedSequence read_sequence(std::span<const std::byte> bytes, std::string_view what,
                            const Context &ctx) {
    StateReader in(bytes, what);
    std::array<char, 8> magic{};
    if (bytes.size() < magic.size())
        fail("state", "{}: not a Loom sequence file (too short)", what);
    in.bytes(magic.data(), magic.size());
    if (magic != kMagic) fail("state", "{}: not a Loom sequence file", what);
    const auto version = in.get<uint32_t>();
    if (version != kVersion) {
        fail("state", "{}: version {} of the sequence file, this Loom reads {}", what, version,
             kVersion);
    }
    Digest model;
    in.bytes(model.data(), model.size());
    const Digest own = header_digest(ctx.model());
    if (model != own) {
        fail("state", "{}: saved with another model (GGUF header SHA-256 {}, this model's {})",
             what, hex(model), hex(own));
    }
    SequenceState state;
    state.tokens = get_array<int32_t>(in);
    state.logits = get_array<float>(in);
    const std::vector<char> rng = get_array<char>(in);
    state.rng.assign(rng.begin(), rng.end());
    const std::vector<std::byte> memory = get_array<std::byte>(in);
    if (!in.at_end()) fail("state", "{}: {} bytes after its end", what, bytes.size() - in.offset());
    const int64_t n_vocab = ctx.model().hparams().n_vocab;
    if (!state.logits.empty() && int64_t(state.logits.size()) != n_vocab) {
        fail("state", "{}: {} logits, the model has {} tokens", what, state.logits.size(), n_vocab);
    }
    for (const int32_t t : state.tokens) {
        if (t < 0 || t >= n_vocab) fail("state", "{}: token {} is outside the vocabulary", what, t);
    }
    SavedSequence saved{.state = std::move(state), .cells = ctx.read_seq(memory, what)};
    if (std::ssize(saved.state.tokens) != saved.cells.pos_max() + 1) {
        fail("state", "{}: {} tokens, but its cells end at position {}", what,
             saved.state.tokens.size(), saved.cells.pos_max());
    }
    return saved;
}

}  // namespace loom::engine
