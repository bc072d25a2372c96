#include "engine/models/embeddings.h"

namespace loom::engine {

void load_embeddings(WeightLoader &w, const HParams &hp, ModelWeights &m, OutputHead head) {
    m.tok_embd = w.require("token_embd.weight", {hp.n_embd, hp.n_vocab});
    w.read_by_rows(m.tok_embd);
    m.output_norm = w.require("output_norm.weight", {hp.n_embd});
    switch (head) {
        case OutputHead::tied:
            m.output = m.tok_embd;
            break;
        case OutputHead::own_or_tied:
            m.output = w.optional("output.weight", {hp.n_embd, hp.n_vocab});
            if (m.output == nullptr) m.output = m.tok_embd;
            break;
        case OutputHead::own:
            m.output = w.require("output.weight", {hp.n_embd, hp.n_vocab});
            break;
    }
}

}  // namespace loom::engine
