#pragma once
// Binds a GGUF file's tensors to a model's weights, checking each one's presence, shape and type.
#include <map>
#include <string>

#include "engine/model/hparams.h"
#include "loom/gguf.h"

namespace loom::engine {

class WeightLoader {
  public:
    // Tensor records for every tensor of `file`, made in `ctx` (no_alloc), data in the mapping.
    WeightLoader(const gguf::File &file, Context &ctx);

    // The tensor `name` with exactly the dims `ne` (trailing 1s may be omitted); loom::fail
    // ("model", ...) says which tensor is missing or what its shape or type is instead.
    Tensor *require(const std::string &name, std::initializer_list<int64_t> ne);
    // As require, but null when the file has no such tensor.
    Tensor *optional(const std::string &name, std::initializer_list<int64_t> ne);
    // "blk.<layer>.<name>"
    static std::string layer_name(int64_t layer, std::string_view name);

    // Tensors of the file that no require / optional asked for.
    std::vector<std::string> unused() const;
    // Weights a matrix product reads (every 2-D weight bound as a matrix), for repacking.
    const std::vector<Tensor *> &matrices() const { return matrices_; }
    // Every other weight bound (norms, biases, scales), once each.
    const std::vector<Tensor *> &other_weights() const { return other_weights_; }
    // Marks t as read by something other than a matrix product (a row lookup), so it keeps the
    // file's layout.
    void read_by_rows(Tensor *t) { row_read_.push_back(t); }
    const std::vector<Tensor *> &row_read() const { return row_read_; }

  private:
    Tensor *bind(const std::string &name, std::initializer_list<int64_t> ne, bool required);
    std::string path_;  // for messages
    std::map<std::string, Tensor *, std::less<>> by_name_;
    std::map<std::string, bool, std::less<>> used_;
    std::vector<Tensor *> matrices_;
    std::vector<Tensor *> other_weights_;
    std::vector<Tensor *> row_read_;
};

}  // namespace loom::engine
