#pragma once
// Turns a generation's token pieces into text that is safe to send as it comes: whole UTF-8
// characters only (a character's bytes may come in two tokens), and nothing that could still be
// the start of a stop string. When a stop string appears, the text before it is the last.
#include <string>
#include <string_view>
#include <vector>

namespace loom::serve {

class TextStream {
  public:
    explicit TextStream(std::vector<std::string> stops = {});

    // Adds a piece; returns the text that can be sent now (possibly empty).
    std::string push(std::string_view piece);
    // The end of the generation: whatever was held back as a possible stop string. Bytes of an
    // unfinished character are dropped.
    std::string finish();
    // A stop string has appeared; nothing more will be returned.
    bool stopped() const { return stopped_; }

  private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

// The length of the longest prefix of s made of whole UTF-8 characters.
size_t complete_utf8_prefix(std::string_view s);

}  // namespace loom::serve
