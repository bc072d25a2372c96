// `loom gguf dump FILE [--json]`: describes a GGUF file (header, metadata, tensor table).
// `loom gguf synth OUT [--type T] [--n-embd N ...]`: writes a Llama-shaped model with random
// weights (for benchmarks, and `make run` when no real model is at hand); with --arch bert (or
// nomic-bert, jina-bert-v2) --vocab FILE an encoder (parity tests, embedding benchmarks).
// `loom gguf set IN OUT [--string KEY=TEXT] [--string-file KEY=PATH]`: a copy of IN with string
// keys set (a chat template added or replaced, a name changed), tensors unchanged.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/gguf.h"
#include "tools/loom/commands.h"

namespace loom::tools {
namespace {

// "KEY=VALUE" split at the first '='.
std::pair<std::string, std::string> key_and_value(const std::string &arg) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) fail("gguf", "'{}' is not KEY=VALUE", arg);
    return {arg.substr(0, eq), arg.substr(eq + 1)};
}

void add_gguf_set_command(CLI::App &gguf, int &exit_code) {
    CLI::App *set = gguf.add_subcommand("set", "copy a GGUF file with string metadata keys set");
    struct SetOptions {
        std::string in, out;
        std::vector<std::string> strings, string_files;
    };
    auto o = std::make_shared<SetOptions>();
    set->add_option("in", o->in, "the GGUF file to copy")->required();
    set->add_option("out", o->out, "the GGUF file to write")->required();
    set->add_option("--string", o->strings, "KEY=TEXT: a string key");
    set->add_option("--string-file", o->string_files, "KEY=PATH: a string key, its text a file's");
    set->callback([o, &exit_code] {
        if (o->in == o->out) fail("gguf", "set writes a new file: OUT must differ from IN");
        const gguf::File source(o->in);
        gguf::Writer w;
        for (const auto &entry : source.metadata().entries()) w.set(entry.key, entry.value);
        for (const std::string &arg : o->strings) {
            auto [key, value] = key_and_value(arg);
            w.set(key, value);
        }
        for (const std::string &arg : o->string_files) {
            auto [key, path] = key_and_value(arg);
            std::ifstream in(path, std::ios::binary);
            if (!in) fail("gguf", "cannot read '{}'", path);
            w.set(key, std::string(std::istreambuf_iterator<char>(in), {}));
        }
        for (const gguf::TensorInfo &t : source.tensors()) {
            w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                         source.tensor_data(t).data());
        }
        w.write(o->out);
        exit_code = 0;
    });
}

}  // namespace

void add_gguf_command(CLI::App &app, int &exit_code) {
    CLI::App *gguf = app.add_subcommand("gguf", "inspect GGUF model files");
    gguf->require_subcommand(1);

    CLI::App *dump = gguf->add_subcommand(
        "dump", "print the header, every metadata key with its type and value, and the tensors");
    auto path = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    dump->add_option("file", *path, "the GGUF file")->required();
    dump->add_flag("--json", *as_json, "one JSON object, every value in full");
    dump->callback([path, as_json, &exit_code] {
        const gguf::File file(*path);
        const std::string text =
            *as_json ? gguf::format_json(file.contents()) : gguf::format_text(file.contents());
        std::fwrite(text.data(), 1, text.size(), stdout);
        exit_code = 0;
    });

    CLI::App *synth = gguf->add_subcommand(
        "synth",
        "write a model with random weights (fixed seed): a llama with a synthetic vocabulary, or "
        "an encoder (bert, nomic-bert, jina-bert-v2) with the vocabulary of --vocab");
    struct SynthOptions {
        std::string out, type_name = "Q8_0", arch = "llama", vocab, pooling = "mean";
        engine::LlamaShape shape;
        int64_t n_ctx = 512, n_cls_out = 0;
        float stddev = 0.02f;
        uint32_t seed = 1;
    };
    auto o = std::make_shared<SynthOptions>();
    synth->add_option("out", o->out, "the GGUF file to write")->required();
    synth->add_option("--arch", o->arch, "llama, bert, nomic-bert or jina-bert-v2")
        ->capture_default_str();
    synth->add_option("--type", o->type_name, "type of the 2-D weights (F32, F16, Q8_0, Q4_0, ...)")
        ->capture_default_str();
    synth->add_option("--n-vocab", o->shape.n_vocab, "llama: the synthetic vocabulary's size")
        ->capture_default_str();
    synth->add_option("--n-embd", o->shape.n_embd)->capture_default_str();
    synth->add_option("--n-layer", o->shape.n_layer)->capture_default_str();
    synth->add_option("--n-head", o->shape.n_head)->capture_default_str();
    synth->add_option("--n-head-kv", o->shape.n_head_kv, "llama")->capture_default_str();
    synth->add_option("--n-ff", o->shape.n_ff)->capture_default_str();
    synth->add_option("--seed", o->seed)->capture_default_str();
    synth->add_option("--vocab", o->vocab, "encoders: a GGUF file whose tokenizer keys to copy");
    synth->add_option("--n-ctx", o->n_ctx, "encoders: the training context")->capture_default_str();
    synth->add_option("--pooling", o->pooling, "encoders: none, mean, cls, last or rank")
        ->capture_default_str();
    synth
        ->add_option("--n-cls-out", o->n_cls_out,
                     "bert: a reranker's classifier head with this many outputs (0: none)")
        ->capture_default_str();
    synth->add_option("--std", o->stddev, "encoders: the weights' standard deviation")
        ->capture_default_str();
    synth->callback([o, &exit_code] {
        const std::optional<DType> type = dtype_from_name(o->type_name);
        if (!type) fail("gguf", "unknown type {}", o->type_name);
        const std::optional<engine::Pooling> pooling = engine::pooling_from_name(o->pooling);
        if (!pooling) {
            fail("gguf", "--pooling '{}' is not one of none, mean, cls, last, rank", o->pooling);
        }
        const engine::EncoderShape encoder{.n_embd = o->shape.n_embd,
                                           .n_layer = o->shape.n_layer,
                                           .n_head = o->shape.n_head,
                                           .n_ff = o->shape.n_ff,
                                           .n_ctx = o->n_ctx,
                                           .pooling = *pooling,
                                           .n_cls_out = o->n_cls_out,
                                           .stddev = o->stddev};
        engine::write_synthetic_model(o->out, o->arch, o->shape, encoder, *type, o->vocab, o->seed);
        exit_code = 0;
    });

    add_gguf_set_command(*gguf, exit_code);
}

}  // namespace loom::tools
