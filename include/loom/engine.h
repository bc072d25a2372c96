#pragma once
// Loom's C++ engine API, in one header: what a program built inside this tree, and every `loom`
// tool, uses to run a model (tests/style/check_tool_includes.sh holds tools/ to it):
//
//   model      Model::load, ModelParams, HParams             engine/model/model.h
//   context    Context, ContextOptions, decode, logits,      engine/context/context.h
//              embeddings, sequence save / load
//   batch      Batch (tokens or embeddings, positions,       engine/context/batch.h
//              sequences, which outputs)
//   memory     Context::memory(): seq_rm / seq_cp / seq_keep / seq_add, sizes, its KV caches
//   saved      save_sequence / load_sequence (files)         engine/context/sequence_state.h
//   shifting   shift_context (a full context goes on)        engine/context/context_shift.h
//   pooling    pool (an encoder's token states to one        engine/context/pooling.h
//              embedding), l2_normalize, embed_sequences,
//              rerank_pair_tokens (a reranker's input)
//   sampler    Sampler, SamplingParams                       engine/sampling/sampler.h
//   grammar    parse_gbnf, json_schema_to_gbnf, TokenGrammar engine/grammar/
//              (a TokenConstraint for Sampler::sample)
//   tokenizer  Vocab: tokenize, detokenize, special tokens   engine/vocab/vocab.h
//   chat       ChatFormatter (the model's Jinja template or a built-in family), ChatRender,
//              PromptCache (a conversation's tokens so far)  engine/chat/
//   files      quantize_file, write_synthetic_model          engine/quantize/, engine/model(s)/
//
// The headers behind it are the engine's own. `make install` installs them with this one
// (`pkg-config loom-cpp`) and libloom.so exports namespace loom, but C++ classes change shape
// from one release to the next: a program outside this tree rebuilds for each release, or uses
// the C ABI, include/loom/loom.h, which keeps its shape.
#include "engine/chat/chat_formatter.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_chat.h"
#include "engine/chat/prompt_cache.h"
#include "engine/context/batch.h"
#include "engine/context/context.h"
#include "engine/context/context_shift.h"
#include "engine/context/pooling.h"
#include "engine/context/sequence_state.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_grammar.h"
#include "engine/jinja/json.h"
#include "engine/memory/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/synthetic_llama.h"
#include "engine/models/synthetic_encoders.h"
#include "engine/quantize/quantize.h"
#include "engine/sampling/sampler.h"
#include "engine/vocab/vocab.h"
