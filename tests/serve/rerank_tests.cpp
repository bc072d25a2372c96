// The /v1/rerank request and answer: documents as strings or Jina's {"text"} objects, each made a
// (query, document) pair for the reranker, results sorted by score with top_n and the documents'
// texts where asked, TEI's bare list for a body with "texts", the fields' errors naming them.
#include "tools/loom/serve/rerank.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "loom/gguf.h"
#include "tests/serve/refused_param.h"
#include "tools/loom/serve/request.h"

namespace loom::serve {
namespace {

const engine::Vocab &bert_vocab() {
    static const engine::Vocab vocab = [] {
        const auto path = std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" /
                          "models" / "vocab" / "ggml-vocab-bert-bge.gguf";
        if (!std::filesystem::exists(path)) ADD_FAILURE() << "missing " << path;
        return engine::Vocab::from_gguf(gguf::File(path.string()));
    }();
    return vocab;
}

RerankRequest parse(const char *body, std::string_view prompt = "") {
    return parse_rerank_request(nlohmann::json::parse(body), bert_vocab(), prompt, 20);
}

std::string param_of(const char *body) {
    return refused_param(body, [](const char *b) { parse(b); });
}

TEST(Rerank, DocumentsBecomePairs) {
    const RerankRequest r = parse(R"({"query": "a cat", "documents": ["the dog", {"text": "x"}]})");
    ASSERT_EQ(r.documents, (std::vector<std::string>{"the dog", "x"}));
    // [CLS] a cat [SEP] the dog [SEP]
    EXPECT_EQ(r.pairs[0], (std::vector<int32_t>{101, 1037, 4937, 102, 1996, 3899, 102}));
    EXPECT_EQ(r.top_n, 2u);
    EXPECT_FALSE(r.tei);
    // The model's rerank prompt, where it has one, with special tokens parsed.
    const RerankRequest p =
        parse(R"({"query": "cat", "documents": ["dog"]})", "{query}[SEP]{document}");
    EXPECT_EQ(p.pairs[0], (std::vector<int32_t>{4937, 102, 3899}));
}

TEST(Rerank, SortedBestFirstWithTopNAndTexts) {
    RerankRequest r = parse(R"({"query": "q", "documents": ["a", "b", "c"], "top_n": 2,
                                "return_documents": true})");
    const nlohmann::json out = rerank_json(r, {0.5f, 2.0f, -1.0f}, "m");
    EXPECT_EQ(out["object"], "list");
    EXPECT_EQ(out["model"], "m");
    ASSERT_EQ(out["results"].size(), 2u);
    EXPECT_EQ(out["results"][0]["index"], 1);
    EXPECT_EQ(out["results"][0]["relevance_score"], 2.0f);
    EXPECT_EQ(out["results"][0]["document"]["text"], "b");
    EXPECT_EQ(out["results"][1]["index"], 0);
    int64_t tokens = 0;
    for (const auto &pair : r.pairs) tokens += int64_t(pair.size());
    EXPECT_EQ(out["usage"]["prompt_tokens"], tokens);

    r = parse(R"({"query": "q", "texts": ["a", "b"], "return_text": true})");
    EXPECT_TRUE(r.tei);
    const nlohmann::json tei = rerank_json(r, {0.1f, 0.2f}, "m");
    ASSERT_TRUE(tei.is_array());
    EXPECT_EQ(tei[0]["index"], 1);
    EXPECT_EQ(tei[0]["score"], 0.2f);
    EXPECT_EQ(tei[0]["text"], "b");
}

TEST(Rerank, FieldErrorsNameTheField) {
    EXPECT_EQ(param_of(R"([1])"), "");
    EXPECT_EQ(param_of(R"({"documents": ["a"]})"), "query");
    EXPECT_EQ(param_of(R"({"query": 3, "documents": ["a"]})"), "query");
    EXPECT_EQ(param_of(R"({"query": "q"})"), "documents");
    EXPECT_EQ(param_of(R"({"query": "q", "documents": []})"), "documents");
    EXPECT_EQ(param_of(R"({"query": "q", "texts": "a"})"), "texts");
    EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a", {"txt": "b"}]})"), "documents[1]");
    EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "top_n": 0})"), "top_n");
    EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "top_n": "2"})"), "top_n");
    EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a"], "return_documents": 1})"),
              "return_documents");
    // 20 tokens at most: the pair is too long.
    EXPECT_EQ(param_of(R"({"query": "q", "documents": ["a b c d e f g h i j k l m n o p q r s"]})"),
              "documents[0]");
}

}  // namespace
}  // namespace loom::serve
