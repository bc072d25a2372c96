#pragma once
// A model loaded from a GGUF file: hyperparameters, the architecture's descriptor, the vocabulary
// and the weights. Weights stay in the file's read-only mapping, except the matrices of matrix
// products, which are copied into cpu_repack_buffer_type() (huge pages; block formats with
// integer kernels interleaved for them), or into the memory of the backend that runs their layer.
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/model/arch.h"
#include "engine/model/deferred_moves.h"
#include "engine/model/hparams.h"
#include "engine/model/weights.h"
#include "engine/vocab/vocab.h"
#include "loom/backend.h"
#include "loom/gguf.h"

namespace loom::engine {

struct ModelParams {
    bool repack = true;  // copy the matrices out of the mapping, block formats interleaved
    // With repack: the matrices of the repacked layouts are repacked on a thread of their own
    // after load returns, the first tokens computed from the mapping with the same bits meanwhile
    // (engine/model/deferred_moves.h); false: before load returns.
    bool repack_in_background = true;
    bool progress = true;  // a progress bar on stderr while loading files over 100 MB
    // The memory each layer's weights are copied into (null, or no function: the CPU's), e.g.
    // another backend's for the layers it is to run (the types outlive the model); the weights of
    // no layer stay with the CPU.
    std::function<BufferType *(int64_t layer)> layer_buffer_type;
};

class Model {
  public:
    // Throws loom::Error: "[gguf] ..." for a malformed file, "[model] ..." for an unsupported
    // architecture (listing the supported ones) or a missing / misshapen tensor.
    static std::unique_ptr<Model> load(const std::string &path, const ModelParams &params = {});

    const HParams &hparams() const { return hp_; }
    const ArchDescriptor &arch() const { return *arch_; }
    const ModelWeights &weights() const { return weights_; }
    const Vocab &vocab() const { return *vocab_; }
    const gguf::File &file() const { return *file_; }
    // Where layer il's weights are (ModelParams::layer_buffer_type); null: the CPU's memory.
    BufferType *layer_buffer_type(int64_t il) const {
        return layer_types_.empty() ? nullptr : layer_types_.at(size_t(il));
    }
    uint64_t n_params() const { return n_params_; }
    uint64_t size_bytes() const { return size_bytes_; }
    // "<arch> <size> <type>" as llama-bench names a model, e.g. "llama 260K F32".
    std::string description() const;

    // Held by whoever reads the weights' data (a graph built, allocated and computed): while any
    // hold lasts no weight moves. Taking one first moves the weights whose background copies are
    // finished, if nobody holds one (ModelParams::repack_in_background).
    std::shared_lock<std::shared_mutex> weights_in_use() const;
    // Waits until every weight is where it stays, in the pages it keeps (the huge pages merged
    // where they wait for a pause, core/huge_pages.h): for measurements of the steady state.
    void finish_moving_weights() const;

  private:
    Model() = default;
    HParams hp_;
    const ArchDescriptor *arch_ = nullptr;
    ModelWeights weights_;
    std::unique_ptr<gguf::File> file_;
    std::unique_ptr<loom::Context> tensors_;
    std::vector<BufferType *> layer_types_;                // per layer, or empty: all the CPU's
    std::vector<std::unique_ptr<Buffer>> weight_buffers_;  // weights moved out of the mapping
    std::unique_ptr<Vocab> vocab_;
    uint64_t n_params_ = 0;
    uint64_t size_bytes_ = 0;
    // Last: its thread reads the tensors and the mapping above until it is destroyed. Moving
    // weights is no change of the model's value, so the const members above may do it.
    std::unique_ptr<DeferredMoves> deferred_moves_;
};

}  // namespace loom::engine
