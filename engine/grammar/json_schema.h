#pragma once
// JSON Schema to GBNF: a grammar whose sentences are JSON documents the schema accepts, for
// `loom run --json-schema` and the server's `response_format` (as llama.cpp's converter, so that
// the same schema gives the same kind of output).
//
// Every sentence of the grammar is valid under the schema; not every valid document is a
// sentence, because generation needs one good form rather than all of them:
// - an object's properties come in one order, the required ones first, each group in the
//   schema's order; optional ones may be left out; no other keys unless `additionalProperties`
//   says so (and then only in an object without `properties`);
// - whitespace is at most a newline and 20 spaces or tabs, or one space, between tokens;
// - integers have at most 16 digits, fractions 16, exponents 2 (every number fits a double).
// A string's `pattern` becomes the grammar of its matches (regex_gbnf.h).
// `minimum` / `maximum` (and their exclusive forms) bound an integer exactly; on a number only
// "minimum": 0 is taken. Keywords that assert something the converter cannot express yet
// (other bounds on numbers, `multipleOf`, `uniqueItems`, `not`, ...) are refused with an
// error that names the keyword and where it is, rather than ignored: ignoring one would let the
// model write invalid output. Annotations (`title`, `description`, `default`, `examples`, ...) and
// unknown keywords are ignored, as JSON Schema says.
#include <string>
#include <string_view>

namespace loom::engine::grammar {

// The GBNF text (its start rule is `root`) of the schema's JSON text; properties are written in
// the order the text lists them. Throws loom::Error("[json-schema] at <JSON pointer>: ...") for
// text that is not JSON, a schema the converter cannot express, or one that is not a schema.
std::string json_schema_to_gbnf(std::string_view schema_text);

}  // namespace loom::engine::grammar
