#pragma once
// The bodies of the libFuzzer targets other than the GGUF reader's, shared by the targets
// (fuzz/*_fuzz.cpp, built with clang and sanitizers by `make fuzz`) and by the replay of their
// committed corpus in `make test` (tests/fuzz/replay_tests.cpp). Each takes any bytes; a
// loom::Error or a RequestError is a clean refusal, anything else (a crash, a sanitizer report,
// another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/vocab/vocab.h"

namespace loom::fuzz {

// The vocabularies of ../shared/models/vocab that Loom reads (the SentencePiece and BPE ones
// llama.cpp ships tests for); `root` is the repository's root.
std::vector<std::unique_ptr<engine::Vocab>> load_vocabularies(const std::string &root);

// The first byte picks a vocabulary and the flags; the rest is text: tokenized (special tokens
// parsed or not), the ids detokenized and turned into pieces, and the bytes also read as ids
// (in range or not) for detokenize.
void tokenizer_one_input(const std::vector<std::unique_ptr<engine::Vocab>> &vocabs,
                         const uint8_t *data, size_t size);

// The bytes as the body of POST /v1/completions and /v1/chat/completions (with a chat's tools,
// the grammar of a required call), and as a model's answer for the <think> and <tool_call>
// parsers, whose parts must not depend on where the text is cut (the first byte picks the cut).
void request_one_input(const uint8_t *data, size_t size);

// ../shared/models/stories260K.gguf and the gemma2 and gpt-oss fixture models, each cut to two
// layers, read once: what model_load_one_input lies about (the first byte's upper bits pick the
// model). `root` is the repository's root.
struct BaseModel;
std::shared_ptr<BaseModel> load_base_model(const std::string &root);

// The bytes as up to 16 lies told by a copy of the base model (hparams of any integer type and
// value, 2^40 contexts, head counts that do not divide, token ids and arrays of the wrong length,
// merges of missing pieces, tensors of other shapes, types or names, another architecture),
// written as a well-formed GGUF; then loaded, a context made, a prompt tokenized and decoded.
void model_load_one_input(const BaseModel &base, const uint8_t *data, size_t size);

// The first byte picks a built-in chat family and whether to add the generation prompt; the rest
// is cut at 0 bytes into messages with any roles, rendered by that family.
void chat_template_one_input(const uint8_t *data, size_t size);

// The bytes up to the first 0 as a Jinja template, parsed and rendered on the messages that
// follow it (a JSON array; a fixed conversation with a tool call when they do not parse), with
// tools, under tight render limits so that each input stays cheap.
void jinja_one_input(const uint8_t *data, size_t size);

// ../shared/models/stories260K.gguf, read once, for sequence_state_one_input.
struct StateBase;
std::shared_ptr<StateBase> load_state_base(const std::string &root);

// The bytes as a saved sequence file (engine/context/sequence_state.h), loaded into sequence 0
// of a small context that holds another sequence; what loads must decode on, and the other
// sequence must be left as it was.
void sequence_state_one_input(const StateBase &base, const uint8_t *data, size_t size);

// The bytes up to the first 0 as a GBNF grammar (engine/grammar/gbnf.h); where it parses, the
// bytes after it read by a matcher in pieces of 1 to 4 bytes (the first byte of each piece sets
// its length), asking whether each piece is allowed before reading it, as a sampler would.
void grammar_one_input(const uint8_t *data, size_t size);

// The bytes up to the first 0 as a JSON Schema's text (engine/grammar/json_schema.h); where it
// converts, the grammar is parsed and the bytes after the 0 read as grammar_one_input does.
void json_schema_one_input(const uint8_t *data, size_t size);

}  // namespace loom::fuzz
