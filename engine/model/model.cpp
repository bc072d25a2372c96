#include "engine/model/model.h"

#include "core/huge_pages.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "engine/model/deferred_moves.h"
#include "engine/model/parallel_tasks.h"
#include "loom/cpu.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

// Files above this size get a progress bar while their matrices are copied.
constexpr uint64_t kProgressBytes = uint64_t(100) << 20;

std::string human_count(uint64_t n) {
    if (n >= 1000000000) return fmt::format("{:.1f}B", double(n) / 1e9);
    if (n >= 1000000) return fmt::format("{:.1f}M", double(n) / 1e6);
    if (n >= 1000) return fmt::format("{}K", (n + 500) / 1000);
    return std::to_string(n);
}

// Drops this process's pages of the file mapping that hold bytes of [p, p + n): the bytes were
// copied out, and a page dropped comes back from the file (the page cache) if it is read again,
// so the pages shared with a neighbour that is still read cost that neighbour one fault.
// Without this every repacked weight is resident twice (an F16 model took 3.5 GB for 1.7).
void release_mapped_pages(const void *p, size_t n) {
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
    if (end > begin) ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

// "loading weights: NN%" on stderr: redrawn in place on a terminal, a line every 25 % in a log.
class LoadProgress {
  public:
    LoadProgress(bool show, uint64_t total)
        : show_(show), tty_(::isatty(STDERR_FILENO) != 0), total_(total) {}
    void add(uint64_t bytes) {
        if (!show_) return;
        std::lock_guard lock(mutex_);
        done_ += bytes;
        const int percent = int(100 * done_ / total_);
        const int step = tty_ ? 1 : 25;
        if (percent / step == shown_ / step) return;
        shown_ = percent;
        std::fprintf(stderr, tty_ ? "\rloading weights: %3d%%" : "loading weights: %d%%\n",
                     percent);
        if (tty_ && percent == 100) std::fputc('\n', stderr);
    }

  private:
    bool show_, tty_;
    uint64_t total_, done_ = 0;
    int shown_ = -1;
    std::mutex mutex_;
};

// The layer number of a "blk.<n>.<name>" tensor, -1 for a tensor of no layer.
int64_t layer_of(std::string_view name) {
    if (!name.starts_with("blk.")) return -1;
    int64_t n = 0;
    size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < (int64_t(1) << 40); ++i) {
        n = n * 10 + (name[i] - '0');
    }
    return i > 4 && i < name.size() && name[i] == '.' ? n : -1;
}

// Moves the weights out of the file's mapping: each into its layer's buffer type where one is
// given (`layer_types`), the others into cpu_repack_buffer_type() where `repack` is set, one
// buffer per type. There the block formats the integer kernels use are repacked, the others
// copied as they are, so that every weight streamed per token lies in anonymous memory with huge
// pages (a file mapping has 4 KiB pages: F16 generation 9.4 -> 11 tokens/s here). The small
// weights (norms, biases) move too: where the page cache holds the file in 2 MiB folios the
// kernel maps a whole folio on a fault, so each 8 KiB norm read from the mapping kept 2 MiB
// resident (+60 MB peak RSS on the 1B Q5_0 file). Weights whose rows are looked up (token
// embeddings, tied or not) stay in the mapping. Tensors are moved in parallel, largest first (so
// that no core is left with a big one at the end), and each one's mapped pages are dropped once
// it has moved.
struct MovedWeights {
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<Tensor *> later;  // to repack in the background, still in the mapping
};

MovedWeights move_weights(const WeightLoader &loader, const std::vector<BufferType *> &layer_types,
                          const ModelParams &params, const std::string &path) {
    struct Move {
        Tensor *tensor;
        const void *source;
    };
    std::vector<Move> moves;
    MovedWeights moved;
    std::map<BufferType *, std::vector<Tensor *>> by_type;
    for (const std::vector<Tensor *> *list : {&loader.matrices(), &loader.other_weights()}) {
        for (Tensor *t : *list) {
            const auto &rows = loader.row_read();
            if (std::find(rows.begin(), rows.end(), t) != rows.end()) continue;
            if (t->data == nullptr) continue;  // already chosen: a weight listed twice
            const int64_t il = layer_of(t->name);
            BufferType *type =
                il >= 0 && !layer_types.empty() ? layer_types.at(size_t(il)) : nullptr;
            if (type == nullptr && !params.repack) continue;
            // The matrices headed for the repacked layout: most of a model's bytes, so most of
            // its start where fresh memory comes slowly (a VM whose host backs each page on its
            // first touch). They are computed from the file's layout with the same bits
            // meanwhile (F16 and BF16 transposed in registers, the block formats permuted a few
            // groups at a time: core/cpu/qgemm.h), so the first tokens need not wait for them.
            if (type == nullptr && params.repack_in_background && cpu_repacks(t)) {
                moved.later.push_back(t);
                continue;
            }
            by_type[type != nullptr ? type : &cpu_repack_buffer_type()].push_back(t);
            moves.push_back({t, t->data});
            t->data = nullptr;
            t->buffer = nullptr;
        }
    }
    uint64_t total = 0;
    for (const Move &m : moves) total += m.tensor->nbytes();
    for (const Tensor *t : moved.later) total += t->nbytes();
    if (total > available_memory()) {
        fail("model",
             "{}: its weight matrices need {} of memory and {} is available (a smaller "
             "quantization of the model would fit)",
             path, gib(double(total)), gib(double(available_memory())));
    }
    for (auto &[type, tensors] : by_type) moved.buffers.push_back(place_tensors(*type, tensors));
    std::stable_sort(moves.begin(), moves.end(), [](const Move &a, const Move &b) {
        return a.tensor->nbytes() > b.tensor->nbytes();
    });
    uint64_t now = 0;
    for (const Move &m : moves) now += m.tensor->nbytes();
    LoadProgress shown(params.progress && now > kProgressBytes, now);
    run_tasks(moves.size(), std::thread::hardware_concurrency(), [&](size_t i) {
        const Move &m = moves[i];
        m.tensor->buffer->set_tensor(m.tensor, m.source, 0, m.tensor->nbytes());
        release_mapped_pages(m.source, m.tensor->nbytes());
        shown.add(m.tensor->nbytes());
    });
    return moved;
}

// Reads the tensors read by rows (the token embeddings) into the page cache now, without mapping
// them: a token's row then costs a minor fault, not a read from disk (0.2 ms per token in a 1B
// model on a machine that had dropped the file's pages), and only the rows used count in the
// process's memory, as in llama.cpp. (MADV_POPULATE_READ, which mapped all of them, made peak RSS
// 7-9 % above llama.cpp's for Q8_0 and Q6_K files.) Best effort: a refusal changes no result.
void prefetch_row_read(const WeightLoader &loader) {
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    for (const Tensor *t : loader.row_read()) {
        if (t->data == nullptr) continue;
        const auto begin = reinterpret_cast<uintptr_t>(t->data) / page * page;
        const auto end = reinterpret_cast<uintptr_t>(t->data) + t->nbytes();
        ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_WILLNEED);
    }
}

std::string first_names(const std::vector<std::string> &names) {
    constexpr size_t kShown = 4;
    std::string out;
    for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
    if (names.size() > kShown) out += fmt::format(" and {} more", names.size() - kShown);
    return out;
}

// Every tensor of the file is one the architecture reads, as llama.cpp requires: a tensor left
// over means the metadata lies about the file (too small a block_count) or the file has parts
// Loom would silently skip (biases, experts of another layout).
void check_all_used(const WeightLoader &loader, const HParams &hp, const std::string &path) {
    const std::vector<std::string> unused = loader.unused();
    if (unused.empty()) return;
    std::vector<std::string> past_layers;
    for (const std::string &name : unused) {
        if (layer_of(name) >= hp.n_layer) past_layers.push_back(name);
    }
    if (!past_layers.empty()) {
        fail("model",
             "{}: {}.block_count = {}, but the file has tensors of layers past it ({}), which "
             "would be left unused",
             path, hp.arch, hp.n_layer, first_names(past_layers));
    }
    fail("model",
         "{}: {} tensors of the file are not part of a {} model ({}); it does not match "
         "its metadata",
         path, unused.size(), hp.arch, first_names(unused));
}

// A mixture-of-experts model has a router in some layer (the llama architecture would otherwise
// run its dense tensors and ignore expert_count).
void check_experts(const HParams &hp, const ModelWeights &w, const std::string &path) {
    if (hp.n_expert == 0) return;
    for (const LayerWeights &l : w.layers) {
        if (l.ffn_gate_inp != nullptr) return;
    }
    fail("model",
         "{}: {}.expert_count = {}, but no layer has expert tensors (blk.N.ffn_gate_inp.weight, "
         "blk.N.ffn_*_exps.weight)",
         path, hp.arch, hp.n_expert);
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string &path, const ModelParams &params) {
    std::unique_ptr<Model> m(new Model);
    m->file_ = std::make_unique<gguf::File>(path);
    const gguf::File &file = *m->file_;
    const std::string arch = file.metadata().get<std::string>("general.architecture");
    m->arch_ = find_arch(arch);
    if (m->arch_ == nullptr) {
        fail("model", "{}: architecture '{}' is not supported (supported: {})", path, arch,
             supported_archs());
    }
    m->hp_ = HParams::from_gguf(file.metadata());
    if (m->arch_->read_hparams != nullptr) m->arch_->read_hparams(file.metadata(), m->hp_);
    // Every layer has tensors of its own: a larger count is a lie (and would size the per-layer
    // tables before any tensor was found missing).
    if (uint64_t(m->hp_.n_layer) > file.tensors().size()) {
        fail("model", "{}: {}.block_count = {}, but the file has only {} tensors", path, arch,
             m->hp_.n_layer, file.tensors().size());
    }
    const gguf::TensorInfo *embd = file.find_tensor("token_embd.weight");
    if (embd == nullptr) fail("model", "{}: tensor token_embd.weight is missing", path);
    m->hp_.n_vocab = embd->ne[1];

    m->tensors_ = std::make_unique<loom::Context>(
        ContextParams{.mem_size = file.context_size(), .no_alloc = true});
    WeightLoader loader(file, *m->tensors_);
    m->arch_->load_weights(loader, m->hp_, m->weights_);
    check_experts(m->hp_, m->weights_, path);
    check_all_used(loader, m->hp_, path);
    m->vocab_ = std::make_unique<Vocab>(Vocab::from_gguf(file));
    if (m->vocab_->n_tokens() != m->hp_.n_vocab) {
        fail("model", "{}: the vocabulary has {} tokens but token_embd.weight has {} rows", path,
             m->vocab_->n_tokens(), m->hp_.n_vocab);
    }
    for (const gguf::TensorInfo &t : file.tensors()) {
        m->n_params_ += uint64_t(t.nelements());
        m->size_bytes_ += t.nbytes;
    }
    if (params.layer_buffer_type) {
        for (int64_t il = 0; il < m->hp_.n_layer; ++il) {
            m->layer_types_.push_back(params.layer_buffer_type(il));
        }
    }
    MovedWeights moved = move_weights(loader, m->layer_types_, params, path);
    m->weight_buffers_ = std::move(moved.buffers);
    if (!moved.later.empty()) {
        m->deferred_moves_ = std::make_unique<DeferredMoves>(
            cpu_repack_buffer_type(), std::move(moved.later), release_mapped_pages);
    }
    prefetch_row_read(loader);
    return m;
}

std::shared_lock<std::shared_mutex> Model::weights_in_use() const {
    if (deferred_moves_ == nullptr) return {};
    return deferred_moves_->hold();
}

void Model::finish_moving_weights() const {
    if (deferred_moves_ != nullptr) deferred_moves_->finish();
    settle_huge_pages();
}

std::string Model::description() const {
    return fmt::format("{} {}", hp_.arch, human_count(n_params_));
}

}  // namespace loom::engine
